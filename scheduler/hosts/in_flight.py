"""Claims of this process in flight: assumed in the host table, not over.

A plan made on an assumed state counts on that claim: its own claim is
checked against the generation the assumed claim leaves, and another
writer's change can leave that same number if the assumed claim fails. So
a claim planned on another claim of this process that is still in flight
waits for it (:meth:`InFlight.wait_for`) and is lost with it. The planning
cycle (:class:`scheduler.hosts.manager.HostManager`) owns one
:class:`InFlight` and calls it from ``assume``, ``await_assumed`` and
``settle``.
"""
from __future__ import annotations

import dataclasses
import threading

from oslo_config import cfg
from oslo_log import log as logging

from scheduler.db import response
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict

LOG = logging.getLogger(__name__)


def assumed_wait(conf: cfg.ConfigOpts) -> float:
    """Seconds a claim waits for a claim of this process it was planned on
    to be over.

    A claim is over, won or lost, once its retries give up: a database
    away for ``[scheduler] db_outage_timeout`` (one window from its
    request's start), then one last round trip (``response.timeout``).
    A claim still not over by then is stuck (a lock held for good) or was
    never settled (a bug): waiting on would hold this request with it. It
    is not a wait for correctness: a claim made on a generation another
    writer left is refused by SQL all the same. So past this the wait
    ends as a lost race, and the request re-plans on what SQL has.
    """
    return float(conf.scheduler.db_outage_timeout + response.timeout(conf))


@dataclasses.dataclass(eq=False)
class _Claim:
    """One claim assumed and not over yet, made by the request thread
    ``owner`` (one thread assumes, claims and settles a request's
    claim)."""
    owner: int = dataclasses.field(default_factory=threading.get_ident)
    over: threading.Event = dataclasses.field(
        default_factory=threading.Event)
    won: bool = False


class InFlight:
    """The claims of this process assumed in the table and not over."""

    def __init__(self) -> None:
        # (node id, generation its assumed state has) -> the claims in
        # flight that are to leave that generation, latest last: two
        # can, when a full read put back the node as it was before the
        # first one's claim. Until each is over (see settle).
        self._claims: dict[tuple[int, int], list[_Claim]] = {}
        self._lock = threading.Lock()

    def add(self, node_id: int, generation: int) -> None:
        """This thread's claim is to leave ``node_id`` at ``generation``
        (its assumed state's)."""
        with self._lock:
            self._claims.setdefault((node_id, generation), []).append(
                _Claim())

    def wait_for(self, to_claim: list[Claim], timeout: float) -> None:
        """Wait for the claims in flight whose assumed states ``to_claim``
        was planned on (a node at the generation such a claim is to leave)
        to be over.
        :raises ClaimConflict: one of them was lost (the generation the
            plan counted on will be someone else's, if any), or was not
            over within ``timeout`` seconds."""
        for node_id, generation in {(c.node_id, c.generation)
                                    for c in to_claim}:
            with self._lock:
                # The latest: the one whose assumed state the table held.
                prior = self._claims.get((node_id, generation), [None])[-1]
            if prior is None:
                continue
            if not prior.over.wait(timeout):
                LOG.warning("A claim on compute node %s was not over in "
                            "%g s; re-planning the claim planned on it",
                            node_id, timeout)
                raise ClaimConflict(
                    f"compute node {node_id}: the claim this plan counted "
                    f"on was not over in {timeout:g} s", node_id)
            if not prior.won:
                raise ClaimConflict(
                    f"compute node {node_id}: the claim this plan counted "
                    f"on was lost", node_id)

    def settle(self, to_claim: list[Claim], won: bool) -> None:
        """This thread's claim of ``to_claim`` (one generation bump per
        node) is over: let the claims planned on it go on (``won``) or
        lose."""
        me = threading.get_ident()
        for key in {(c.node_id, c.generation + 1) for c in to_claim}:
            with self._lock:
                pending = self._claims.get(key, [])
                mine = [claim for claim in pending if claim.owner == me]
                for claim in mine:
                    pending.remove(claim)
                if not pending:
                    self._claims.pop(key, None)
            for claim in mine:
                claim.won = won
                claim.over.set()
