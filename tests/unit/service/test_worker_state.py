"""WorkerStates: reports over the real socket pair, as after a fork."""
from __future__ import annotations

import time

from scheduler.service import worker_state as ws


def states(expected: int = 2, stale_after: float = 60.0) -> ws.WorkerStates:
    return ws.WorkerStates(ws.Channel(), expected, stale_after)


def test_consuming_only_when_every_worker_reports_it():
    s = states()
    assert s.verdict() == (False, "0/2 workers consuming; worker 0 "
                                  "starting; worker 1 starting")
    s.channel.report(0, ws.CONSUMING)
    s.channel.report(1, ws.LOADING)
    ok, line = s.verdict()
    assert not ok
    assert line.startswith("1/2 workers consuming; worker 1 (pid ")
    assert line.endswith("loading host table")
    s.channel.report(1, ws.CONSUMING)
    assert s.verdict() == (True, "2/2 workers consuming")


def test_a_silent_worker_is_not_consuming():
    s = states(expected=1, stale_after=0.05)
    s.channel.report(0, ws.CONSUMING)
    assert s.verdict()[0]
    time.sleep(0.1)
    ok, line = s.verdict()
    assert not ok and "not responding" in line


def test_exit_keeps_the_failure_reported_just_before():
    s = states(expected=1)
    s.channel.report(0, ws.FAILED, "no scheduler schema in x", fatal=True)
    last = s.exited(0, 1)
    assert last.state == ws.FAILED and last.fatal
    assert last.reason == "no scheduler schema in x"
    ok, line = s.verdict()
    assert not ok and line.endswith("exited: no scheduler schema in x")


def test_exit_without_a_report_names_the_status():
    s = states(expected=1)
    s.channel.report(0, ws.CONSUMING)
    s.poll()
    assert s.exited(0, -9).state == ws.CONSUMING
    assert s.verdict()[1].endswith("exited: exited with status -9")
