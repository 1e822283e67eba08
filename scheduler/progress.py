"""Progress of long work, for a person watching a terminal.

The convention is git's: progress goes to stderr (stdout stays the
command's result, JSON included), and only when stderr is a terminal,
unless ``--progress`` forces it (a CI log) or ``--no-progress`` turns it
off. A line at the start, then at most one a second, then one at the end,
so work that takes a second costs two lines.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, TextIO

#: ``report(done)``: called with how much of the work is done so far.
Report = Callable[[int], None]
#: ``start(total)``: called once the total is known; returns the Report.
Start = Callable[[int], Report]

#: ``--progress``/``--no-progress``; None means "if stderr is a terminal".
FLAG = "--progress"
OPTION = dict(action=argparse.BooleanOptionalAction, default=None,
              help="report progress of long work on stderr (default: when "
                   "stderr is a terminal)")


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--progress``/``--no-progress`` to ``parser``."""
    parser.add_argument(FLAG, **OPTION)


def wanted(flag: bool | None, stream: TextIO | None = None) -> bool:
    """Whether to show progress: the flag if given, else whether
    ``stream`` (stderr) is a terminal."""
    if flag is not None:
        return flag
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def reporter(what: str, total: int, enabled: bool,
             interval: float = 1.0,
             clock: Callable[[], float] = time.monotonic,
             stream: TextIO | None = None) -> Report:
    """A :data:`Report` printing ``"{what} {done}/{total} (P%)"``: on the
    first call, then at most once per ``interval`` seconds, and when
    ``done`` reaches ``total``. Prints nothing when not ``enabled``."""
    if not enabled:
        return lambda done: None
    last = [float("-inf")]

    def report(done: int) -> None:
        now = clock()
        if now - last[0] < interval and done < total:
            return
        last[0] = now
        percent = 100 * done // total if total else 100
        print(f"{what} {done}/{total} ({percent}%)",
              file=stream or sys.stderr, flush=True)
    return report
