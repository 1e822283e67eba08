"""What one RPC request did, recorded as it runs, for its telemetry.

:func:`scheduler.rpc.instrument.rpc_method` begins a :class:`Trace` for the
calling thread (the executor runs one request per thread) and ends it when
the method returns. Code deep in the request path adds to it through the
module functions here, which do nothing outside a request (a periodic
refresh, a benchmark calling the driver directly): that is what lets the
driver time its stages without being handed anything.

Kept cheap on purpose: one small object per request, a float addition per
stage; names and payloads are only built by whoever reads the trace.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

#: The stages of a decision, in the order they run. The same names label
#: the ``scheduler_stage_duration_seconds`` histogram and the DEBUG line.
STAGES = ("parse", "refresh", "filter", "weigh", "claim")
PARSE, REFRESH, FILTER, WEIGH, CLAIM = range(len(STAGES))

#: The refusal label when the hosts passed the filters but the claims
#: were refused (every attempt lost a race, planner and claim disagreed,
#: a forced host had no room).
CLAIM_REFUSAL = "claim"
#: ... and when the request itself could not be honoured (no filter ran:
#: nova's API refuses unsupported requests with NoValidHost).
REQUEST_REFUSAL = "request"

_local = threading.local()


class Trace:
    """One request: its method, stage timings (None: the stage did not
    run), what it was asked (``subject``: a RequestSpec, a Stack, a list
    of consumer uuids, a stack id, set by :func:`parsed`), and which
    filter refused it."""

    __slots__ = ("method", "started", "seconds", "subject", "refused_by",
                 "placed", "on_parsed")

    def __init__(self, method: str,
                 on_parsed: Callable[[Trace], None] | None = None):
        self.method = method
        self.started = time.perf_counter()
        self.seconds: list[float | None] = [None] * len(STAGES)
        self.subject: Any = None
        self.refused_by: str | None = None
        #: The driver's destinations, when the method's reply is in
        #: another shape (nova's Selection objects).
        self.placed: list | None = None
        #: Called once with this trace when the request is parsed (the
        #: ``.start`` notification needs what was asked).
        self.on_parsed = on_parsed

    def timings(self) -> dict[str, float]:
        """stage name -> seconds, for the stages that ran."""
        return {name: s for name, s in zip(STAGES, self.seconds)
                if s is not None}


def begin(method: str,
          on_parsed: Callable[[Trace], None] | None = None) -> Trace:
    """Start the calling thread's trace (replacing any left over)."""
    trace = _local.trace = Trace(method, on_parsed)
    return trace


def end() -> None:
    """Forget the calling thread's trace: executor threads are reused."""
    _local.trace = None


def current() -> Trace | None:
    """The calling thread's trace, or None outside a request."""
    return getattr(_local, "trace", None)


def add(stage: int, seconds: float) -> None:
    """Add ``seconds`` to ``stage`` (an index into STAGES) of the current
    request; a stage that runs several times (per instance, per re-plan)
    accumulates."""
    trace = getattr(_local, "trace", None)
    if trace is not None:
        previous = trace.seconds[stage]
        trace.seconds[stage] = seconds if previous is None \
            else previous + seconds


def parsed(subject: Any, since: float | None = None) -> None:
    """The request is parsed and valid: record what it asks for and, when
    ``since`` (a ``time.perf_counter()`` taken before parsing) is given,
    the parse stage's time."""
    trace = getattr(_local, "trace", None)
    if trace is not None:
        if since is not None:
            add(PARSE, time.perf_counter() - since)
        trace.subject = subject
        if trace.on_parsed is not None:
            callback, trace.on_parsed = trace.on_parsed, None
            callback(trace)


def placed(destinations: list) -> None:
    """The driver chose these destinations (its list of dicts)."""
    trace = getattr(_local, "trace", None)
    if trace is not None:
        trace.placed = destinations


def refused(by: str) -> None:
    """The request is refused because ``by`` (a filter's or targeting
    step's name, or CLAIM_REFUSAL) removed the last hosts."""
    trace = getattr(_local, "trace", None)
    if trace is not None:
        trace.refused_by = by
