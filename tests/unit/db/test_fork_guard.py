"""A fork waits for the threads inside a database driver (db.fork_guard)."""
from __future__ import annotations

import os
import threading

from scheduler.db import fork_guard


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
