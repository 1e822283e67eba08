"""Bounded retries of database work that failed for a transient reason.

oslo.db's stock retry knows deadlocks (DBDeadlock) and lost connections
(DBConnectionError). On MySQL/MariaDB oslo.db raises DBDeadlock for both a
deadlock (1213, also Galera's certification failure "Deadlock: wsrep
aborted transaction") and a lock wait timeout (1205), and
DBConnectionError for a lost or killed connection (2006, 2013, 1927); on
PostgreSQL DBDeadlock for 40P01. It does not know SQLite's "database is
locked" (the busy timeout ran out) nor PostgreSQL's serialization failures
(SQLSTATE 40001): oslo.db 18 re-raises those as the raw SQLAlchemy
OperationalError (older releases wrapped them in DBError).
:func:`is_transient` adds them. On MySQL a lock wait timeout rolls back
only the statement; the retried work still starts over, because the
exception leaves its ``engine.begin()`` block, which rolls back the rest.
The work retried must be one transaction that either committed or left
nothing behind — every claim function is.
"""
from __future__ import annotations

import functools
from typing import Callable, TypeVar

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from scheduler import metrics

T = TypeVar("T")

_SQLITE_BUSY = ("database is locked", "database table is locked")
_PG_SERIALIZATION_FAILURE = "40001"


def is_transient(exc: BaseException) -> bool:
    """True for errors worth trying the same transaction again for."""
    if isinstance(exc, (db_exc.DBDeadlock, db_exc.DBConnectionError)):
        return True
    if isinstance(exc, db_exc.DBError):
        exc = exc.inner_exception
    if not isinstance(exc, sa_exc.OperationalError):
        return False
    if any(text in str(exc.orig) for text in _SQLITE_BUSY):
        return True
    return getattr(exc.orig, "pgcode", None) == _PG_SERIALIZATION_FAILURE


def retrying(attempts: int) -> Callable[[Callable[..., T]],
                                        Callable[..., T]]:
    """Decorator: retry transient database errors up to ``attempts`` more
    times, backing off from 50 ms to at most 1 s; each transient error is
    counted (``scheduler_db_transient_errors_total``)."""
    oslo_retry = oslo_db_api.wrap_db_retry(
        max_retries=attempts, retry_interval=0.05, inc_retry_interval=True,
        max_retry_interval=1.0, retry_on_disconnect=True,
        retry_on_deadlock=True, exception_checker=is_transient)

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(func)
        def counted(*args, **kwargs) -> T:
            # Inside oslo.db's loop, so every attempt's error is seen:
            # its own exception_checker is skipped for deadlocks and
            # lost connections.
            try:
                return func(*args, **kwargs)
            except Exception as e:
                if is_transient(e):
                    metrics.db_transient_error()
                raise
        return oslo_retry(counted)
    return decorate
