"""No fork while a thread of this process is inside a database driver or
writing a log record.

The server's main process forks its workers (at start, and again when one
dies) while its own threads check the databases (:mod:`scheduler.service
.health`, :mod:`scheduler.novadb.probe`) and log (the health monitor's
"Health: ..." line comes as each worker reports). A child inherits every
lock as it was at the fork, and waits for ever for one held then, at its
first database connection or its first log line: a worker stuck "loading
host table", deaf to SIGTERM.

- SQLite's driver holds process-wide mutexes while it opens and closes a
  file (its unix VFS's). So the database checks run :func:`held`, and a
  fork waits for them (and they for it).
- A log handler writes through a buffered file, whose own lock Python does
  not reset in a child (logging resets only the handlers' locks). So a
  fork also takes the lock of every handler of the root logger (where
  oslo.log puts them), as a writer does, and lets them go once it is
  done (``tools/demo``, on a fresh database, stuck about one start in
  thirty without it).

The order is :func:`held`'s lock first: a check may log inside it.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Iterator

_LOCK = threading.Lock()
#: The handlers whose locks the fork in progress holds (in the parent).
_handlers: list[logging.Handler] = []


def _before() -> None:
    _LOCK.acquire()
    for handler in list(logging.getLogger().handlers):
        handler.acquire()
        _handlers.append(handler)


def _after_in_parent() -> None:
    while _handlers:
        _handlers.pop().release()
    _LOCK.release()


def _after_in_child() -> None:
    # logging has given every handler a new lock in the child already.
    _handlers.clear()
    _LOCK.release()


os.register_at_fork(before=_before, after_in_parent=_after_in_parent,
                    after_in_child=_after_in_child)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """No fork of this process until the block ends. Keep it short: a
    fork waits for it. Never fork inside it (that would wait for ever)."""
    with _LOCK:
        yield
