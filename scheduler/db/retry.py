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
"""
from __future__ import annotations

import functools
import random
import time
from typing import Callable, TypeVar

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from scheduler import metrics

T = TypeVar("T")

#: SQLite's busy timeout running out (``[scheduler] db_lock_timeout``):
#: transient here, and named for the operator by :mod:`scheduler.errors`.
SQLITE_BUSY = ("database is locked", "database table is locked")
#: PostgreSQL's serialization failure, and its lock_timeout running out
#: (lock_not_available: ``[scheduler] db_lock_timeout``).
_PG_TRANSIENT = ("40001", "55P03")

#: Seconds before the first retry; doubled after each, up to the maximum.
RETRY_INTERVAL = 0.05
MAX_RETRY_INTERVAL = 1.0


def is_transient(exc: BaseException) -> bool:
    """True for errors worth trying the same transaction again for."""
    if isinstance(exc, (db_exc.DBDeadlock, db_exc.DBConnectionError)):
        return True
    if isinstance(exc, db_exc.DBError):
        exc = exc.inner_exception
    if not isinstance(exc, sa_exc.OperationalError):
        return False
    if any(text in str(exc.orig) for text in SQLITE_BUSY):
        return True
    return getattr(exc.orig, "pgcode", None) in _PG_TRANSIENT


def retrying(attempts: int) -> Callable[[Callable[..., T]],
                                        Callable[..., T]]:
    """Decorator: retry transient database errors up to ``attempts`` more
    times, backing off from 50 ms to at most 1 s (a random part of it after
    a deadlock, as oslo.db does, so the two sides do not meet again); each
    transient error is counted (``scheduler_db_transient_errors_total``).
    The last error is re-raised as it is, for the caller to turn into its
    one line.

    Not oslo.db's ``wrap_db_retry``: when its retries run out it logs the
    error with its traceback ("DB exceeded retry limit") before re-raising
    it, so a database outage put a traceback in the log for every request
    and every periodic task until the database came back.
    """
    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(func)
        def retried(*args, **kwargs) -> T:
            interval = RETRY_INTERVAL
            for remaining in range(attempts, -1, -1):
                try:
                    return func(*args, **kwargs)
                except Exception as e:
                    if not is_transient(e):
                        raise
                    metrics.db_transient_error()
                    if remaining == 0:
                        raise
                    deadlock = isinstance(e, db_exc.DBDeadlock)
                time.sleep(random.uniform(0, interval) if deadlock
                           else interval)
                interval = min(interval * 2, MAX_RETRY_INTERVAL)
            raise AssertionError("unreachable")
        return retried
    return decorate
