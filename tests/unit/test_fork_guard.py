"""A fork waits for the threads inside a database driver or writing a log
record (fork_guard)."""
from __future__ import annotations

import logging
import os
import threading
import time

from scheduler import fork_guard


def test_a_fork_waits_until_no_thread_is_inside_a_driver():
    inside, leave, forked = (threading.Event(), threading.Event(),
                             threading.Event())

    def check_a_database() -> None:
        with fork_guard.held():
            inside.set()
            leave.wait(30)

    def fork_a_worker() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        forked.set()

    checker = threading.Thread(target=check_a_database)
    checker.start()
    assert inside.wait(30)
    forking = threading.Thread(target=fork_a_worker)
    forking.start()
    # Not while the check is inside: a child forked now would inherit the
    # driver's locks held.
    assert not forked.wait(0.5)
    leave.set()
    assert forked.wait(30)
    checker.join()
    forking.join()
    # And the lock is free again in the parent.
    with fork_guard.held():
        pass


class _BufferedStream:
    """A stream with a lock of its own, as io's buffered files have (and
    Python does not reset in a child): ``write`` holds it while it waits
    for ``proceed`` (set it to let writes through)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.writing = threading.Event()
        self.proceed = threading.Event()

    def write(self, text: str) -> None:
        with self.lock:
            self.writing.set()
            self.proceed.wait(30)

    def flush(self) -> None:
        with self.lock:
            pass


def test_a_worker_forked_while_a_record_is_written_can_log():
    stream = _BufferedStream()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    forking = threading.Event()
    # Runs before the guard's own (hooks run last registered first): the
    # fork has begun.
    os.register_at_fork(before=forking.set)
    log = logging.getLogger("health-monitor")
    children: list[int] = []

    def fork_a_worker() -> None:
        pid = os.fork()
        if pid == 0:
            log.error("worker started")     # stuck here if the lock is held
            os._exit(0)
        children.append(pid)

    try:
        writer = threading.Thread(target=log.error, args=("Health: ...",))
        writer.start()
        assert stream.writing.wait(30)
        forker = threading.Thread(target=fork_a_worker)
        forker.start()
        assert forking.wait(30)
        stream.proceed.set()
        forker.join(30)
        writer.join(30)
        [pid] = children
        deadline = time.monotonic() + 30
        while (status := os.waitpid(pid, os.WNOHANG)) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise AssertionError("the worker never got past its first "
                                     "log line")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(status[1]) == 0
    finally:
        stream.proceed.set()
        root.removeHandler(handler)
