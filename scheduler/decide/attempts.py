"""A decision's claim attempts: what a refused claim means, and how running
out of attempts is said.

One owner for the two retry loops that plan, assume and claim: one request
(``drivers.base``) and a whole stack (``stacks.placement``). Each iterates
:class:`Attempts`, plans on :meth:`Attempts.table` with
:attr:`Attempts.spread`, and hands every refused claim to it:

- ``ClaimConflict`` (a node's generation moved, a group member
  placed concurrently): :meth:`conflicted`, a lost race (:meth:`lost`);
  re-plan. Unless a forced host breaks a hard server group's rule: no
  retry can fix that, the refusal is final.
- ``NoRoom`` (not forced): :meth:`no_room` tells a race (the node
  changed under the planner) from a disagreement between planner and claim
  on capacity (a bug): the node is left out and the decision re-planned
  once; a second disagreement is NoValidHost naming both.
- The planner refuses a plan on a table with nodes left out:
  :meth:`refusal` says where they went.
- No attempt left: :meth:`given_up` is the NoValidHost to raise.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Iterable, Iterator

from oslo_log import log as logging

from scheduler.decide import choice
from scheduler.claims.refusals import NoRoom
from scheduler.claims.refusals import GroupConflict
from scheduler.hosts.planned import ClaimConflict
from scheduler import exception
from scheduler import metrics
from scheduler.decide import races
from scheduler.decide.selection import Selection
from scheduler import trace
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec

LOG = logging.getLogger(__name__)

#: How a refusal says that planner and claim disagreed (see
#: :func:`disagreement`), followed by what each saw.
DISAGREED = ("the planner and the claim disagreed on capacity (a bug, not "
             "a race)")


@dataclasses.dataclass
class Attempts:
    """``[scheduler] claim_retries`` + 1 attempts of one decision.

    :param subject: what the decision is, for its messages: ``""`` for a
        request, ``" for stack X"`` for a stack ("No valid host{subject}:
        ...").
    """
    retries: int
    chooser: choice.Chooser
    subject: str = ""
    races: int = 0
    #: The last lost race's exception; None while none was lost.
    conflict: Exception | None = None
    excluded: set[int] = dataclasses.field(default_factory=set)
    disagreed: list[str] = dataclasses.field(default_factory=list)
    _attempt: int = 0
    _began: float = 0.0
    #: The hosts :meth:`table` left after leaving out ``excluded``.
    _left: int = 0

    def __iter__(self) -> Iterator[int]:
        """The attempt numbers, 0 first; each later one is a re-plan."""
        for attempt in range(self.retries + 1):
            self._attempt = attempt
            # The request thread's CPU from here to a lost race is the
            # work that race threw away (waiting is not work).
            self._began = time.thread_time()
            if attempt:
                metrics.replan()
            yield attempt

    @property
    def spread(self) -> int:
        """How many times more of the best hosts to choose among: doubled
        by each lost race, or the requests that lost it together would all
        pick the same next host again."""
        return 2 ** self.races

    def table(self, table: HostTable) -> HostTable:
        """``table`` without the nodes a claim refused for want of room."""
        if not self.excluded:
            return table
        table = table.without(self.excluded)
        self._left = len(table)
        return table

    def refusal(self, e: exception.NoValidHost) -> exception.NoValidHost:
        """The planner's refusal ``e`` of a plan on :meth:`table`: as it
        is, unless nodes were left out after a disagreement. Then its
        counts are of the other hosts alone (with none left, "no compute
        node is registered"), so it says where the left-out nodes went."""
        if not self.disagreed:
            return e
        if not self._left:
            trace.refused(trace.CLAIM_REFUSAL)
            return exception.NoValidHost(
                f"No valid host{self.subject}: {DISAGREED}, and no other "
                f"host is left: " + " | ".join(self.disagreed))
        return exception.NoValidHost(
            f"{e.message}; not counted: {len(self.excluded)} node"
            f"{'s' if len(self.excluded) > 1 else ''} left out after "
            f"{DISAGREED}: " + " | ".join(self.disagreed))

    def lost(self, e: ClaimConflict | NoRoom) -> None:
        """A claim race on ``e.node_id`` was lost: another writer changed
        the node after it was read. The loop re-plans, on a fresh table."""
        self.conflict = e
        self.races += 1
        self.chooser.lost(e.node_id)
        races.lost(e.node_id, self._attempt + 1,
                   time.thread_time() - self._began,
                   replanning=self._attempt < self.retries)

    def conflicted(self, e: ClaimConflict,
                   specs: Iterable[RequestSpec]) -> None:
        """The claim of a plan for ``specs`` was refused by a conflict: a
        lost race (:meth:`lost`), unless :func:`forced_group_breach` says
        no retry can fix it.

        :raises NoValidHost: a forced host would break its hard server
            group (final).
        """
        if forced_group_breach(e, specs):
            trace.refused(trace.CLAIM_REFUSAL)
            raise exception.NoValidHost(
                f"No valid host{self.subject}: a forced host would break "
                f"its server group: {e}")
        self.lost(e)

    def no_room(self, e: NoRoom, selections: list[Selection]) -> None:
        """The claim found no room on a node the planner chose (not a
        forced one: the caller says that itself). A lost race if the node
        changed under the planner; else the node is left out of the next
        attempt.

        :raises NoValidHost: the second time planner and claim disagree.
        """
        why = disagreement(e, selections)
        if why is None:
            self.lost(e)
            return
        metrics.claim_conflict("disagreement")
        LOG.error("Planner and claim disagree (not a race)%s: %s; "
                  "re-planning without that node", self.subject, why)
        self.disagreed.append(why)
        if len(self.disagreed) > 1:
            trace.refused(trace.CLAIM_REFUSAL)
            raise exception.NoValidHost(
                f"No valid host{self.subject}: {DISAGREED}: "
                + " | ".join(self.disagreed))
        self.excluded.add(e.node_id)

    def given_up(self) -> exception.NoValidHost:
        """The NoValidHost to raise when every attempt was refused."""
        trace.refused(trace.CLAIM_REFUSAL)
        if self.conflict is None:
            return exception.NoValidHost(
                f"No valid host{self.subject}: no claim succeeded in "
                f"{self.retries + 1} attempts (last refusal: "
                f"{' | '.join(self.disagreed)})")
        # A disagreement too (the last attempt's, or a node left out):
        # not contention, and not to be read as such.
        disagreed = (f"; {DISAGREED}: " + " | ".join(self.disagreed)
                     if self.disagreed else "")
        return exception.NoValidHost(
            f"No valid host{self.subject}: lost the claim race "
            f"{self.races} times to concurrent requests (last: "
            f"{self.conflict}){disagreed}")


def forced_group_breach(e: ClaimConflict,
                        specs: Iterable[RequestSpec]) -> bool:
    """Whether the claim's conflict ``e`` is final: the rule of a hard
    server group refused it while one of ``specs`` forces its host (or
    node) in such a group. Forcing skips the group filters, not the
    claim's group check, and re-planning would force the same host."""
    return isinstance(e, GroupConflict) and any(
        (spec.force_hosts or spec.force_nodes)
        and spec.instance_group is not None
        and spec.instance_group.is_hard
        for spec in specs)


def disagreement(e: NoRoom,
                 selections: list[Selection]) -> str | None:
    """Why the claim refused a node the planner chose, or None if it was
    a race.

    A race: the claim found other usage on the node than the planner read
    (a writer, e.g. a compute agent, changed it without bumping the
    generation). Otherwise the node is as the planner read it and the
    claim still refused it: planner and claim disagree on capacity, a bug;
    the text says what the claim saw next to what the planner saw.
    """
    planned = [s for s in selections if s.host.node_id == e.node_id]
    if not planned:
        return str(e)
    host = planned[0].host
    seen = _seen_used(host)
    if any(used != seen[name] for name, (used, _, _) in e.refused.items()):
        return None
    parts = []
    for name, (used, amount, limit) in e.refused.items():
        planner_limit = planned[0].limits.get(name)
        parts.append(
            f"{name}: claim saw {used:g} used + {amount:g} > limit "
            f"{limit:g}, planner saw {seen[name]:g} used and "
            + (f"limit {planner_limit:g}" if planner_limit is not None
               else "enforced no limit (no filter for it)"))
    return (f"compute node {e.node_id} ({host.host}, generation "
            f"{host.generation}): " + ("; ".join(parts) or str(e)))


def _seen_used(host: HostState) -> dict[str, float]:
    return {"vcpu": host.vcpus_used, "memory_mb": host.memory_mb_used,
            "disk_gb": host.disk_gb_used}
