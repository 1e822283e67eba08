"""scheduler.progress: git's convention, throttled lines."""
from __future__ import annotations

import argparse
import io

from scheduler import progress


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_first_throttled_and_last_lines():
    out, clock = io.StringIO(), _Clock()
    report = progress.reporter("audit: nodes", 100, True, clock=clock,
                               stream=out)
    report(0)
    clock.now = 0.5
    report(10)            # within the second: held back
    clock.now = 1.2
    report(40)
    report(100)           # the end is always shown
    assert out.getvalue().splitlines() == [
        "audit: nodes 0/100 (0%)", "audit: nodes 40/100 (40%)",
        "audit: nodes 100/100 (100%)"]


def test_disabled_prints_nothing():
    out = io.StringIO()
    report = progress.reporter("x", 5, False, stream=out)
    report(0)
    report(5)
    assert out.getvalue() == ""


def test_empty_work_is_complete():
    out = io.StringIO()
    progress.reporter("x", 0, True, stream=out)(0)
    assert out.getvalue() == "x 0/0 (100%)\n"


def test_wanted_follows_the_flag_else_the_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    assert progress.wanted(None, Tty()) is True
    assert progress.wanted(None, io.StringIO()) is False
    assert progress.wanted(False, Tty()) is False
    assert progress.wanted(True, io.StringIO()) is True


def test_flag_parses_both_ways():
    parser = argparse.ArgumentParser()
    progress.add_argument(parser)
    assert parser.parse_args([]).progress is None
    assert parser.parse_args(["--progress"]).progress is True
    assert parser.parse_args(["--no-progress"]).progress is False
