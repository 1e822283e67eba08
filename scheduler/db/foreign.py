"""Engines for other services' databases (nova's, Heat's), which this
service reads and never writes.

Each connect and each answer waits a bounded time: a database that stops
answering ends a read as an error, never a hang.
"""
from __future__ import annotations

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler import exception

#: What a read of another service's database can fail with, for reasons
#: outside the code: a server away, a lost connection, a timeout.
READ_ERRORS = (sa.exc.SQLAlchemyError, db_exc.DBError, OSError)


def why(exc: BaseException) -> str:
    """The first line of a database error (or a refusal), without
    SQLAlchemy's background link."""
    inner = getattr(exc, "orig", None) or exc
    first = (str(inner).strip().splitlines() or [""])[0]
    return f"{type(inner).__name__}: {first[:200]}"


def reader_engine(url: str, what: str, timeout: float,
                  pooled: bool = True) -> sa.Engine:
    """A read-only-use engine for another service's database whose every
    connect and answer waits at most ``timeout`` seconds: a database that
    stops answering ends a read as an error, never a hang. Not
    ``pooled``: it keeps no connection (a process that forks).

    :raises ConfigError: the URL cannot be used (not a URL, no such
        dialect, driver not installed), naming ``what``, never the
        password.
    """
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise exception.ConfigError(
            f"{what}: not a database URL") from None
    shown = parsed.render_as_string(hide_password=True)
    args: dict = {}
    backend = parsed.get_backend_name()
    seconds = max(1, int(timeout))
    if backend == "mysql":
        args = {"connect_timeout": seconds, "read_timeout": seconds,
                "write_timeout": seconds}
    elif backend == "postgresql":
        args = {"connect_timeout": seconds,
                "options": f"-c statement_timeout={seconds * 1000}"}
    elif backend == "sqlite":
        args = {"timeout": seconds, "check_same_thread": False}
    pool: dict = ({"pool_pre_ping": True, "pool_size": 2, "max_overflow": 2}
                  if pooled else {"poolclass": sa.pool.NullPool})
    try:
        return sa.create_engine(parsed, connect_args=args, **pool)
    except sa.exc.NoSuchModuleError:
        raise exception.ConfigError(
            f"{what}: {shown}: SQLAlchemy has no dialect "
            f"{backend!r}") from None
    except ImportError as e:
        raise exception.ConfigError(
            f"{what}: {shown}: its driver is not installed ({e})") from None
    except TypeError:
        # SQLite's in-memory pool takes no pool_size.
        return sa.create_engine(parsed, connect_args=args,
                                pool_pre_ping=True)
