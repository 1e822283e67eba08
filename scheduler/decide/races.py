"""Lost claim races: the one place that records them.

A scheduler process loses a claim race when another writer changed a node
between this process's read and its claim (``ClaimConflict``): the
decision is thrown away and the request re-plans, up to ``[scheduler]
claim_retries`` times. Every lost race goes through :func:`lost`, which logs
one INFO line (what ``benchmarks/race.py`` counts, and what an operator
greps) and adds to this process's totals; a metrics exporter reads
:func:`totals` or hooks in here, not in the driver's retry loop.
"""
from __future__ import annotations

import dataclasses
import threading

from oslo_log import log as logging

from scheduler import metrics

LOG = logging.getLogger(__name__)

#: The words every lost-race line starts with (benchmarks count them).
LINE = "Lost a claim race"


@dataclasses.dataclass(frozen=True)
class Totals:
    """Since this process started."""
    lost: int = 0           # claims refused because a node changed
    replans: int = 0        # of those, followed by another attempt
    given_up: int = 0       # requests refused after their last lost race
    wasted_s: float = 0.0   # CPU seconds of planning + claiming thrown away


_lock = threading.Lock()
_totals = Totals()


def lost(node_id: int | None, attempt: int, wasted_s: float,
         replanning: bool) -> None:
    """Record that attempt ``attempt`` (1-based) of a request lost the
    claim on ``node_id`` after ``wasted_s`` seconds of the request thread's
    CPU time since the attempt began (refresh, plan, claim: the work thrown
    away; waiting for the planning cycle or the database is not work);
    ``replanning``: another attempt follows, else the request gives up
    with NoValidHost."""
    global _totals
    with _lock:
        _totals = dataclasses.replace(
            _totals, lost=_totals.lost + 1,
            replans=_totals.replans + int(replanning),
            given_up=_totals.given_up + int(not replanning),
            wasted_s=_totals.wasted_s + wasted_s)
    metrics.claim_conflict("race")
    LOG.info("%s on compute node %s (attempt %d): %.2f ms of CPU thrown "
             "away; %s", LINE, node_id, attempt, wasted_s * 1000.0,
             "re-planning" if replanning else "giving up")


def totals() -> Totals:
    """This process's totals so far (a snapshot)."""
    return _totals
