"""Rows measured in turns: each turn gets its share of the limits, and a
row's samples and wall time add up over its turns."""
from __future__ import annotations

import time

from benchmarks import timing
from benchmarks.timing import Limits
from benchmarks.timing import Row


def test_turns_alternate_each_with_its_share_of_the_calls():
    order = []
    a, b = Row("echo_c1", 10), Row("select_c1", 10)

    def turn(row, name):
        def run(share):
            order.append(name)
            timing.repeat(row, lambda: None, share)
        return run

    timing.alternately([turn(a, "a"), turn(b, "b")], Limits(10, 60), 5)

    assert order == ["a", "b"] * 5
    assert len(a.samples) == len(b.samples) == 10


def test_a_concurrent_row_adds_up_its_turns_wall_time():
    # 4 threads, 16 calls of at least 5 ms: each turn takes at least
    # 20 ms from its first call to its last answer.
    row = Row("echo_c8", 10)
    for _ in range(3):
        timing.concurrently(row, lambda: time.sleep(0.005), Limits(16, 60),
                            4)
    assert len(row.samples) == 48
    assert row.wall >= 3 * 0.020
