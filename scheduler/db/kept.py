"""One database connection kept across calls, for work done on every request.

A pooled connection per call costs a checkout (a ping: one round trip on
PostgreSQL and MySQL, a statement on SQLite) and a check-in each time. The
host manager's refresh and the claim batch's transaction run once per
request, one caller at a time; each keeps a connection of its own instead.
"""
from __future__ import annotations

from typing import Callable, TypeVar

from oslo_db import exception as db_exc
import sqlalchemy as sa

T = TypeVar("T")


class KeptConnection:
    """A connection of ``engine`` that stays checked out between calls of
    :meth:`run`. Not thread-safe: its owner runs one call at a time.

    :param autocommit: run the work in autocommit (every statement its own
        transaction: reads that need no common snapshot); else each call is
        one transaction.
    """

    def __init__(self, engine: sa.Engine, autocommit: bool):
        self.engine = engine
        self.autocommit = autocommit
        self._conn: sa.Connection | None = None
        #: Connections made so far: a change tells a caller that what it
        #: read before may come from a database that is gone (a restart,
        #: a failover) and that its replacement may not have.
        self.connects = 0

    def run(self, work: Callable[[sa.Connection], T]) -> T:
        """``work(conn)`` on the kept connection: in autocommit, or in one
        transaction committed when it returns and rolled back if it raises.

        Unpinged, a connection the database dropped since its last use (a
        restart, an admin's kill) fails at its first statement. The
        connection is discarded after a database error (or an interrupt),
        and after a lost connection the work runs once more on a new one.
        A transaction cut off at its COMMIT may have committed; work that
        is run again must then fail as a repeat (a claim's consumer key
        does) rather than do it twice. An exception of the work's own (a
        lost claim race) only rolls its transaction back: the connection
        stays.
        :raises: whatever ``work`` or the database raises.
        """
        kept = self._conn is not None
        while True:
            if self._conn is None:
                self._conn = self.engine.connect()
                self.connects += 1
                if self.autocommit:
                    self._conn.execution_options(isolation_level="AUTOCOMMIT")
            try:
                if self.autocommit:
                    return work(self._conn)
                with self._conn.begin():
                    return work(self._conn)
            except Exception as e:
                if not isinstance(e, (sa.exc.SQLAlchemyError,
                                      db_exc.DBError)):
                    raise
                self.close()
                if not (kept and isinstance(e, db_exc.DBConnectionError)):
                    raise
                kept = False     # once more, on a new connection
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        """Drop the connection (at shutdown, or after an error): closed,
        not given back to the pool. After an error, or a database restart
        since its last use, it may be lost, and the rollback that closing
        or the pool's check-in runs then fails: oslo.db raises that as
        DBConnectionError (not an SQLAlchemyError), and the pool logs it
        with a traceback."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.invalidate()
                conn.close()
            except (sa.exc.SQLAlchemyError, db_exc.DBError):
                pass   # already lost
