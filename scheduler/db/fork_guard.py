"""No fork while a thread of this process is inside a database driver.

The server's main process forks its workers (at start, and again when one
dies) while its own threads check the databases (:mod:`scheduler.service
.health`, :mod:`scheduler.novadb.probe`). A child inherits every lock as
it was at the fork: SQLite's driver holds process-wide mutexes while it
opens and closes a file (its unix VFS's), and a child forked inside that
window waits for them for ever at its first database connection, a worker
stuck "loading host table". So those checks run :func:`held`, and a fork
waits for them (and they for it), through ``os.register_at_fork``.
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterator

_LOCK = threading.Lock()


def _release() -> None:
    _LOCK.release()


os.register_at_fork(before=_LOCK.acquire, after_in_parent=_release,
                    after_in_child=_release)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """No fork of this process until the block ends. Keep it short: a
    fork waits for it. Never fork inside it (that would wait for ever)."""
    with _LOCK:
        yield
