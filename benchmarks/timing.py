"""How samples are taken: repeat a call until enough requests or the time
budget is spent, at concurrency 1 or N; raw seconds out, no statistics.

Each row of the report is one :class:`Row`: the samples (seconds per call),
the errors, and for a concurrent row the wall time from the first call
issued to the last one answered, which makes its requests per second. A
row may be measured in several turns (:func:`alternately`): its samples and
wall time add up.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from typing import Callable, Sequence

#: A row stops early (budget spent) only after this many samples.
MIN_SAMPLES = 3


@dataclasses.dataclass
class Row:
    measure: str                 # key into report.MEASURES
    hosts: int                   # fleet size (echo rows: measured next to it)
    samples: list[float] = dataclasses.field(default_factory=list)
    concurrency: int = 1
    wall: float | None = None    # seconds, concurrent rows only
    errors: int = 0
    first_error: str = ""        # the first expected exception, for notes
    notes: list[str] = dataclasses.field(default_factory=list)
    #: CPU seconds the serving process group spent over the row (end-to-end
    #: rows only; see benchmarks/cpu.py)
    server_cpu: float | None = None
    #: Mean seconds per request the servers' handler took, as a whole
    #: ("service") and per stage, from their own metrics (select rows
    #: only; see benchmarks/service_split.py)
    service_split: dict[str, float] | None = None

    @property
    def cpu_ms_per_call(self) -> float | None:
        calls = len(self.samples) + self.errors
        if self.server_cpu is None or not calls:
            return None
        return self.server_cpu * 1000.0 / calls

    @property
    def requests_per_second(self) -> float | None:
        if self.wall is None or not self.wall or not self.samples:
            return None
        return len(self.samples) / self.wall


@dataclasses.dataclass(frozen=True)
class Limits:
    """How many calls a row makes: ``requests``, or fewer once ``budget``
    seconds (setup included) have passed and MIN_SAMPLES are in."""
    requests: int
    budget: float

    def more(self, done: int, started: float) -> bool:
        if done >= self.requests:
            return False
        if done < MIN_SAMPLES:
            return True
        return time.monotonic() - started < self.budget


def repeat(row: Row, call: Callable[[], object], limits: Limits,
           setup: Callable[[int], object] | None = None,
           expected: tuple[type[BaseException], ...] = ()) -> Row:
    """Time ``call()`` one at a time; ``setup(i)`` runs untimed before
    call i. An ``expected`` exception counts as an error, not a sample."""
    started = time.monotonic()
    i = 0
    while limits.more(i, started):
        if setup is not None:
            setup(i)
        t0 = time.perf_counter()
        try:
            call()
        except expected as e:
            _error(row, e)
        else:
            row.samples.append(time.perf_counter() - t0)
        i += 1
    return row


def concurrently(row: Row, call: Callable[[], object], limits: Limits,
                 concurrency: int,
                 expected: tuple[type[BaseException], ...] = ()) -> Row:
    """``concurrency`` threads calling ``call()`` back to back until the
    limits say stop; the row's wall time runs from the first call to the
    last answer."""
    lock = threading.Lock()
    issued = 0
    failures: list[BaseException] = []
    started = time.monotonic()
    last_done = [started]

    def worker() -> None:
        nonlocal issued
        while True:
            with lock:
                if failures or not limits.more(issued, started):
                    return
                issued += 1
            t0 = time.perf_counter()
            try:
                call()
            except expected as e:
                with lock:
                    _error(row, e)
                    last_done[0] = time.monotonic()
                continue
            except BaseException as e:  # reported by the caller
                with lock:
                    failures.append(e)
                return
            elapsed = time.perf_counter() - t0
            with lock:
                row.samples.append(elapsed)
                last_done[0] = time.monotonic()

    threads = [threading.Thread(target=worker, name=f"bench-{i}",
                                daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    row.concurrency = concurrency
    row.wall = (row.wall or 0.0) + last_done[0] - started
    if failures:
        raise failures[0]
    return row


def alternately(turns: Sequence[Callable[[Limits], object]], limits: Limits,
                rounds: int) -> None:
    """Take turns: each of ``turns`` runs with its share of ``limits``, one
    after the other, ``rounds`` times over.

    Rows measured in turns live through the same minutes of the machine,
    so the ratio between them does not hang on which row a slow spell
    fell on. On the benchmark machine the same row's median went from 2.4
    to 4.5 ms within ten minutes.
    """
    share = Limits(math.ceil(limits.requests / rounds),
                   limits.budget / rounds)
    for _ in range(rounds):
        for turn in turns:
            turn(share)


def _error(row: Row, e: BaseException) -> None:
    row.errors += 1
    if not row.first_error:
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        row.first_error = f"{type(e).__name__}: {text}"[:200]
