"""Waiting for a condition, never for a fixed time.

A test that stages a race (a writer queued behind a lock the test holds)
or waits for a server to do something asynchronous polls for the thing
itself: a session waiting for a lock, a row, a log line. A sleep of a
guessed length is too short on a busy machine and too long everywhere
else.
"""
from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import re
import threading
import time

import sqlalchemy as sa

#: How often a condition is looked at again.
POLL = 0.05


def wait_until(check: Callable[[], object], what: str,
               timeout: float = 30, poll: float = POLL) -> object:
    """Poll ``check()`` every ``poll`` seconds until it returns something
    true, and return that.

    :raises AssertionError: naming ``what`` when ``timeout`` seconds pass
        first.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened within {timeout}s: {what}")
        time.sleep(poll)


#: InnoDB refreshes what information_schema.innodb_trx shows only when
#: it was last read longer ago than 0.1 s: read more often, it stays as
#: it was.
_INNODB_TRX_CACHE = 0.1

#: The statements that take SQLite's write lock.
_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


def _waiting_sessions(engine: sa.Engine) -> set[int]:
    """The sessions on ``engine``'s database (PostgreSQL or MariaDB)
    waiting for a lock now."""
    if engine.dialect.name == "postgresql":
        query = ("SELECT pid FROM pg_stat_activity "
                 "WHERE datname = current_database() "
                 "AND wait_event_type = 'Lock'")
    else:
        query = ("SELECT t.trx_mysql_thread_id "
                 "FROM information_schema.innodb_trx t "
                 "JOIN information_schema.processlist p "
                 "ON p.id = t.trx_mysql_thread_id "
                 "WHERE t.trx_state = 'LOCK WAIT' AND p.db = database()")
    with engine.connect() as conn:
        return set(conn.execute(sa.text(query)).scalars())


@contextlib.contextmanager
def lock_waits(engine: sa.Engine) -> Iterator[Callable[[int], None]]:
    """``waiting(n)`` returns once ``n`` sessions on ``engine``'s
    database have been seen waiting for a lock since the block began: how
    a test queues writers behind a lock it holds, in the order it starts
    them.

    PostgreSQL and MariaDB show a waiting session (``pg_stat_activity``,
    InnoDB's transactions in ``LOCK WAIT``). Sessions seen once count on:
    MariaDB may pick one of two waiters as a deadlock's victim, which
    then waits again after its retry. SQLite shows none; there a writer
    waits at its first write while another connection holds the
    database's write lock, so what is counted is the threads other than
    this one that have begun a write.
    """
    seen: set[int] = set()
    if engine.dialect.name != "sqlite":
        def waited(n: int) -> bool:
            seen.update(_waiting_sessions(engine))
            return len(seen) >= n
        poll = _INNODB_TRX_CACHE * 2 if engine.dialect.name == "mysql" \
            else POLL
        yield lambda n: wait_until(lambda: waited(n),
                                   f"{n} sessions waiting for a lock",
                                   poll=poll)
        return
    this = threading.get_ident()

    def begun(conn, cursor, statement, *args) -> None:
        if threading.get_ident() != this and _WRITE.match(statement):
            seen.add(threading.get_ident())

    sa.event.listen(engine, "before_cursor_execute", begun)
    try:
        yield lambda n: wait_until(lambda: len(seen) >= n,
                                   f"{n} threads writing")
    finally:
        sa.event.remove(engine, "before_cursor_execute", begun)
