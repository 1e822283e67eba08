"""scheduler.trace: what one request did, recorded from deep in its path."""
from __future__ import annotations

import threading

from scheduler import trace


def test_outside_a_request_nothing_is_recorded():
    trace.end()
    trace.add(trace.CLAIM, 1.0)
    trace.parsed("x")
    trace.refused("RamFilter")
    assert trace.current() is None


def test_stages_accumulate_and_only_those_that_ran_are_reported():
    t = trace.begin("select_destinations")
    try:
        trace.add(trace.FILTER, 0.25)
        trace.add(trace.FILTER, 0.5)
        trace.add(trace.CLAIM, 0.125)
        assert t.timings() == {"filter": 0.75, "claim": 0.125}
    finally:
        trace.end()
    assert trace.current() is None


def test_parsed_records_the_subject_and_calls_back_once():
    calls = []
    t = trace.begin("select_destinations", calls.append)
    try:
        trace.parsed("spec", since=0.0)
        trace.parsed("again")
        trace.refused("RamFilter")
    finally:
        trace.end()
    assert calls == [t]
    assert t.subject == "again"
    assert t.seconds[trace.PARSE] > 0
    assert t.refused_by == "RamFilter"


def test_each_thread_has_its_own_trace():
    mine = trace.begin("mine")
    seen = []
    thread = threading.Thread(target=lambda: seen.append(trace.current()))
    thread.start()
    thread.join()
    trace.end()
    assert seen == [None] and mine.method == "mine"
