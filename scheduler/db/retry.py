"""Bounded retries of database work that failed for a transient reason.

oslo.db's stock retry knows deadlocks (DBDeadlock) and lost connections
(DBConnectionError). On MySQL/MariaDB oslo.db raises DBDeadlock for both a
deadlock (1213, also Galera's certification failure "Deadlock: wsrep
aborted transaction") and a lock wait timeout (1205), and
DBConnectionError for a lost or killed connection (2006, 2013, 1927); on
PostgreSQL DBDeadlock for 40P01. It does not know SQLite's "database is
locked" (the busy timeout ran out), PostgreSQL's serialization failures
(SQLSTATE 40001) nor its lock timeout (55P03): oslo.db 18 re-raises
those as the raw SQLAlchemy OperationalError (older releases wrapped them
in DBError).
:func:`is_transient` adds them. On MySQL a lock wait timeout rolls back
only the statement; the retried work still starts over, because the
exception leaves its ``engine.begin()`` block, which rolls back the rest.
The work retried must be one transaction that either committed or left
nothing behind — every claim function is.

Two bounds: a deadlock, lock or serialization failure is retried
``[scheduler] db_retries`` times (it is a conflict, over in milliseconds or
never); a database that cannot be reached (:func:`is_away`: a lost or
refused connection, a server starting up or shutting down) is retried for
``[scheduler] db_outage_timeout`` seconds, what a restart or a failover
takes, however many attempts that is. Within an RPC request or cast
(:func:`serving`) those seconds are one window for all its transactions,
counted from its start: neither its steps nor its wait behind another
request's each get a window of their own.

Nor does a request begin or commit a transaction, first or retried, once
its caller has stopped waiting for the reply (``[DEFAULT]
rpc_response_timeout``, :func:`serving`): it raises
:class:`~scheduler.exception.CallerGone` instead
(:func:`refuse_if_caller_gone`). The caller has re-sent
the request by then, or given up. A scheduler cut off the network in the
middle of a request would otherwise claim when the network came back —
after the re-sent request was answered, and perhaps after the caller
released what it was told: a claim nobody holds. (A transaction held up
by the cut is ended by the server, its locks with it —
``idle_in_transaction_session_timeout``, set by :mod:`scheduler.db.engine`
— or, if the network comes back first, refused at its COMMIT.)
"""
from __future__ import annotations

import contextlib
import functools
import logging
import random
import threading
import time
from typing import Any, Callable, Iterator, TypeVar

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from scheduler import exception
from scheduler import metrics

LOG = logging.getLogger(__name__)

T = TypeVar("T")

#: SQLite's busy timeout running out (``[scheduler] db_lock_timeout``):
#: transient here, and named for the operator by :mod:`scheduler.errors`.
SQLITE_BUSY = ("database is locked", "database table is locked")
#: PostgreSQL's serialization failure, and its lock_timeout running out
#: (lock_not_available: ``[scheduler] db_lock_timeout``).
_PG_TRANSIENT = ("40001", "55P03")

#: The database server cannot be reached (libpq says "timeout expired"
#: when its ``connect_timeout`` runs out: a server that accepts and never
#: answers).
UNREACHABLE = ("could not connect", "connection refused", "can't connect",
               "timeout expired")
#: The connection to the server was lost: reset or closed under a
#: statement or a login, or ended by the server (PostgreSQL's 57P01-57P05
#: "terminating connection due to administrator command", "... because of
#: crash of another server process"; MariaDB's 2013 "Lost connection to
#: MySQL server during query" and 2006 "MySQL server has gone away", with
#: PyMySQL's "[Errno 104] Connection reset by peer" inside). psycopg2 says
#: a bare "Connection reset by peer" for a reset while it connects through
#: the wait callback (:mod:`scheduler.db.response`), and libpq "SSL
#: SYSCALL error: Connection reset by peer" / "EOF detected" over TLS:
#: neither is in SQLAlchemy's psycopg2 ``is_disconnect`` list, which also
#: misses libpq's disconnect texts after a quote ('connection to server at
#: "db", port 5432 failed: server closed the connection unexpectedly').
#: The engine marks each as a disconnect (:func:`scheduler.db.engine
#: .create_engine`), so the pool drops the connection.
LOST = ("connection reset", "broken pipe",
        "closed the connection unexpectedly",
        "connection has been closed unexpectedly",
        "terminating connection", "eof detected",
        "could not receive data from server",
        "could not send data to server", "connection already closed",
        "server has gone away", "lost connection")
#: The database server is away or busy for now (:func:`is_away`):
#: unreachable, lost, refusing new sessions while it starts up, shuts down
#: or recovers (PostgreSQL's 57P03; MariaDB's 1053), or out of connection
#: slots. Each passes by itself.
AWAY = UNREACHABLE + LOST + (
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "too many clients", "remaining connection slots are reserved",
    "server shutdown in progress", "too many connections")
#: ... of those, a round trip the server did not answer in time
#: (:mod:`scheduler.db.response`; PyMySQL's socket timeouts): the attempt
#: waited all that time for the database.
UNANSWERED = ("timed out",)

#: Seconds before the first retry; doubled after each, up to the maximum.
RETRY_INTERVAL = 0.05
MAX_RETRY_INTERVAL = 1.0

#: Set once this process stops (:func:`stop`): a transaction waiting for
#: the database gives up, so the worker drains and exits now, not after
#: ``db_outage_timeout``.
_stopping = threading.Event()

#: ``since``: when this thread began serving its RPC request or cast
#: (:func:`serving`), else None.
_request = threading.local()


@contextlib.contextmanager
def serving(patience: float | None = None) -> Iterator[None]:
    """This thread serves one RPC request or cast until the block ends:
    the ``outage`` window of every :func:`retrying` call in it counts from
    now, not from each call's first error, so the request or cast waits
    for a database that cannot be reached ``db_outage_timeout`` seconds
    in all — however many transactions it runs, and however long it
    queued behind other requests waiting for the same database.

    :param patience: seconds the caller waits for the reply (its RPC
        timeout); once they have passed since now, no transaction of the
        request begins or commits
        (:class:`~scheduler.exception.CallerGone`).
    """
    outer = getattr(_request, "since", None)
    outer_patience = getattr(_request, "patience", None)
    _request.since = time.monotonic() if outer is None else outer
    if outer is None:
        _request.patience = patience
    try:
        yield
    finally:
        _request.since = outer
        _request.patience = outer_patience


def refuse_if_caller_gone(conn: Any = None) -> None:
    """Raise :class:`~scheduler.exception.CallerGone` if the caller of the
    request this thread serves has stopped waiting for its reply: before a
    transaction begins (:func:`retrying`) and before it commits (the
    engine's ``commit`` event, :mod:`scheduler.db.engine`)."""
    gone = _caller_gone(time.monotonic())
    if gone is not None:
        raise exception.CallerGone(
            f"the caller stopped waiting for this request {gone:.0f} s "
            f"ago ([DEFAULT] rpc_response_timeout); nothing was claimed")


def _caller_gone(now: float) -> float | None:
    """Seconds since the caller of the request this thread serves stopped
    waiting for its reply, or None while it waits (or outside a
    request)."""
    since = getattr(_request, "since", None)
    patience = getattr(_request, "patience", None)
    if since is None or patience is None or now - since <= patience:
        return None
    return now - since - patience


def stop() -> None:
    """The process is stopping (SIGTERM): end every wait for a database
    that cannot be reached at once; the work waiting fails with the error
    it last got. A conflict (deadlock, lock) is still retried as bounded:
    the requests in flight are to reply while the worker drains, and it
    is over in milliseconds."""
    _stopping.set()


def _pause(seconds: float, away: bool = True) -> bool:
    """Wait ``seconds`` before a retry after an error, ``away`` (a
    database that cannot be reached) or not. :returns: False if the
    process began stopping, before or meanwhile, and the error was
    ``away`` (then do not retry)."""
    if not away:
        time.sleep(seconds)
        return True
    return not _stopping.wait(seconds)


def is_transient(exc: BaseException) -> bool:
    """True for errors worth trying the same transaction again for."""
    if isinstance(exc, db_exc.DBDeadlock) or is_away(exc):
        return True
    if isinstance(exc, db_exc.DBError):
        exc = exc.inner_exception
    if not isinstance(exc, sa_exc.OperationalError):
        return False
    if any(text in str(exc.orig) for text in SQLITE_BUSY):
        return True
    return getattr(exc.orig, "pgcode", None) in _PG_TRANSIENT


def is_away(exc: BaseException) -> bool:
    """True if the database cannot be reached for now (:data:`AWAY`). oslo.db
    raises DBConnectionError for a lost connection and MySQL's refused one,
    but the raw OperationalError for PostgreSQL's refused connection and a
    server starting up or shutting down."""
    if isinstance(exc, db_exc.DBConnectionError):
        return True
    text = _driver_text(exc)
    return any(t in text for t in AWAY)


def is_lost(exc: BaseException) -> bool:
    """True if ``exc`` says the connection to the server was lost
    (:data:`LOST`): the connection it came from is dead."""
    text = _driver_text(exc)
    return any(t in text for t in LOST)


def is_unanswered(exc: BaseException) -> bool:
    """True if ``exc`` is a round trip the server did not answer in time
    (:data:`UNANSWERED`)."""
    text = _driver_text(exc)
    return any(t in text for t in UNANSWERED)


def _driver_text(exc: BaseException) -> str:
    """The database driver's own message in ``exc`` (under oslo.db's and
    SQLAlchemy's wrappers), lower-cased; empty if it is not a driver's
    error."""
    if isinstance(exc, db_exc.DBError):
        exc = exc.inner_exception
    if not isinstance(exc, sa_exc.DBAPIError):
        return ""
    return str(exc.orig).lower()


def _name(func: Callable) -> str:
    """What the log calls ``func`` (also a functools.partial)."""
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", repr(func))


def for_conf(conf: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """:func:`retrying` as the service's options set it (``[scheduler]
    db_retries`` and ``db_outage_timeout``): what every caller uses."""
    return retrying(conf.scheduler.db_retries,
                    conf.scheduler.db_outage_timeout)


def retrying(attempts: int, outage: float = 0.0
             ) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: retry transient database errors, backing off from 50 ms
    to at most 1 s (a random part of it after a deadlock, as oslo.db does,
    so the two sides do not meet again): a database that cannot be reached
    (:func:`is_away`) until ``outage`` seconds have passed since the first
    such error (inside :func:`serving`: since the request began), beyond
    that and for any other transient error up to ``attempts`` more times.
    Each transient error is counted
    (``scheduler_db_transient_errors_total``). The last error is re-raised
    as it is, for the caller to turn into its one line — also at once if
    the process begins stopping (:func:`stop`) while it waits for a
    database that cannot be reached. The wait is
    in the caller's thread: other requests go on meanwhile.

    A round trip the server did not answer in time (:data:`UNANSWERED`)
    counts as away since its attempt began, and gets no more attempts once
    ``outage`` is spent: each would wait the whole response timeout again
    (with the defaults six more of 35 s, far past the callers' RPC
    timeout).

    Not oslo.db's ``wrap_db_retry``: when its retries run out it logs the
    error with its traceback ("DB exceeded retry limit") before re-raising
    it, so a database outage put a traceback in the log for every request
    and every periodic task until the database came back.
    """
    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(func)
        def retried(*args, **kwargs) -> T:
            interval = RETRY_INTERVAL
            remaining = attempts
            away_since: float | None = None
            # When the outage window began: the request's start, if this
            # runs for one (serving), else this call's first error.
            window_from = float("inf")
            while True:
                refuse_if_caller_gone()
                began = time.monotonic()
                try:
                    result = func(*args, **kwargs)
                except Exception as e:
                    if not is_transient(e):
                        raise
                    metrics.db_transient_error()
                    now = time.monotonic()
                    away = is_away(e)
                    unanswered = away and is_unanswered(e)
                    if away and away_since is None:
                        away_since = began if unanswered else now
                        window_from = getattr(_request, "since",
                                              None) or away_since
                    if not (away and now - window_from < outage):
                        if remaining == 0 or unanswered:
                            raise
                        remaining -= 1
                    deadlock = isinstance(e, db_exc.DBDeadlock)
                    if not _pause(random.uniform(0, interval) if deadlock
                                  else interval, away):
                        raise
                else:
                    if away_since is not None:
                        # One line per call the outage held up.
                        LOG.info("%s: the database answered again after "
                                 "%.1f s", _name(func),
                                 time.monotonic() - away_since)
                    return result
                interval = min(interval * 2, MAX_RETRY_INTERVAL)
        return retried
    return decorate
