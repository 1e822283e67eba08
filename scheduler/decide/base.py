"""What every driver shares: plan on host states, then claim in SQL.

A driver plans (:meth:`Driver.plan`): it picks one host per instance from a
list of host states and explains itself with NoValidHost when it cannot.
The base class runs the plan inside the host manager's scheduling cycle
(refresh, plan, assume the planned usage — one serial step per process),
claims in SQL outside it, and handles what can happen between reading and
claiming: another scheduler won a node (re-read, re-plan, a bounded number
of times), the same consumers were already placed (a client retry: hand
back what they hold, unless ``moves.is_move`` says the request moves them:
then the destination is claimed and the source kept), or — a bug, never a
race — the claim refused a node the planner judged to have room (leave that
node out, re-plan, and say what disagreed if it happens again). What each
refusal means is ``attempts.Attempts``'s to say, for a stack too.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Collection, Iterable

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler.decide import choice
from scheduler.decide import rebuild
from scheduler.decide.assumed import Assumption
from scheduler.decide.attempts import Attempts
from scheduler.decide.selection import destination
from scheduler.decide.selection import held_destination
from scheduler.decide.selection import Selection
from scheduler.claims import batch as claim_batch
from scheduler.claims import drains
from scheduler.claims import lifecycle
from scheduler.claims import moves as claim_moves
from scheduler.claims import usage
from scheduler.claims.groups import GroupRule
from scheduler.claims.refusals import ConsumerExists
from scheduler.claims.refusals import NoRoom
from scheduler.db import allocations
from scheduler.hosts.planned import ClaimConflict
from scheduler import exception
from scheduler import metrics
from scheduler.request import moves
from scheduler import trace
from scheduler.db import retry as db_retry
from scheduler.hosts.manager import HostManager
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.request.hints import HOST_HINTS
from scheduler.request.spec import Flavor
from scheduler.request.spec import RequestSpec

LOG = logging.getLogger(__name__)


class Driver:
    """Base of all drivers. Subclasses implement :meth:`plan`."""

    def __init__(self, conf: cfg.ConfigOpts, host_manager: HostManager,
                 engine: sa.Engine):
        self.conf = conf
        self.host_manager = host_manager
        self.engine = engine
        #: Picks among the best hosts; one per process (drivers are made
        #: in each worker after the fork). The manager gives it the
        #: worker's share.
        self.chooser = choice.Chooser(
            conf.filter_scheduler.host_subset_choice)
        #: Claims of this process's concurrent requests, committed
        #: together when they queue up (one per process, like the chooser).
        self.claims = claim_batch.ClaimBatcher(
            engine, conf.scheduler.claim_batch_size)

    def refusal(self, text: str) -> exception.NoValidHost:
        """The NoValidHost of a refusal explained by ``text``, with what
        the host source could not see (a nova cell not answering)."""
        unavailable = self.host_manager.unavailable
        return exception.NoValidHost(
            f"{text} ({unavailable})" if unavailable else text)

    def host_table(self) -> HostTable:
        """The hosts, refreshed from SQL unless a driver caches: for looking
        at. Decisions plan inside :meth:`cycle`."""
        return self.host_manager.table()

    def cycle(self, fresh: bool = False):
        """The host manager's scheduling cycle (a context manager yielding
        the table): refreshed from SQL unless a driver caches, always when
        ``fresh``."""
        return self.host_manager.planning(refresh=True)

    def plan(self, spec: RequestSpec, table: HostTable,
             spread: int = 1) -> list[Selection]:
        """One Selection per instance, in order, or NoValidHost.

        ``spread`` > 1 asks to choose among that many times more of the best
        hosts than usual: after a lost claim race, the requests that lost
        it together would otherwise all pick the same next host again.
        """
        raise NotImplementedError

    def decide(self, spec: RequestSpec) -> list[Selection]:
        """Refresh and plan, without claiming: the scheduling decision
        alone (what benchmarks time)."""
        spec = self._resolved(spec)
        with self.cycle() as table:
            return self.plan(spec, table)

    def run_periodic_tasks(self) -> None:
        """Called every ``[scheduler] periodic_task_interval`` seconds."""

    def reload(self) -> None:
        """SIGHUP: the configuration was mutated; apply what this driver
        reads at load time (its filters and weighers). Nothing by default.

        :raises ConfigError: the new configuration cannot be applied; the
            driver then keeps working as before.
        """

    def close(self) -> None:
        """The worker stops, no request in flight: give back the
        connections the host manager and the claims keep."""
        self.host_manager.close()
        self.claims.close()

    def select_destinations(self, spec: RequestSpec) -> list[dict[str, Any]]:
        """Plan and claim every instance of ``spec``, all or nothing.

        :raises NoValidHost: with the planner's explanation, or after losing
            ``[scheduler] claim_retries`` races in a row.
        """
        retry = db_retry.for_conf(self.conf)
        uuids = list(spec.instance_uuids)
        if _nothing_depends_on_held(spec):
            # Most requests are new consumers: claim straight away. The
            # unique consumer_uuid key catches a consumer that already
            # holds a claim (a re-send) and rolls the claim back; then, or
            # if the plan was refused, decide again knowing what they hold.
            try:
                return self._place(spec, None)
            except exception.NoValidHost:
                held = retry(allocations.placements)(self.engine, uuids)
                if not held:
                    raise
            except _AlreadyHeld:
                held = retry(allocations.placements)(self.engine, uuids)
        else:
            held = retry(allocations.placements)(self.engine, uuids)
        return self._place(spec, held)

    def _place(self, spec: RequestSpec, held: dict[str, sa.Row] | None
               ) -> list[dict[str, Any]]:
        """:meth:`select_destinations` knowing what the consumers hold
        (``held``), or with ``held`` None assuming they hold nothing:
        then :class:`_AlreadyHeld` if one of them does."""
        retry = db_retry.for_conf(self.conf)
        uuids = list(spec.instance_uuids)
        optimistic = held is None
        held = held or {}
        if spec.is_rebuild:
            return self._rebuild_check(spec, held)
        held = self._end_arrived_moves(spec, held)
        # A claim on a deleted node is no place to move from or to answer
        # with: it is replaced below like any claim the request re-makes.
        moving = [u for u in uuids if u in held
                  and not held[u].node_deleted
                  and moves.is_move(spec, held[u])]
        if allocations.holds_all(held, spec.num_instances) and not moving:
            # The same consumers again (a retry after a lost reply, or the
            # message delivered twice): what they hold is the answer.
            return self._answer_held(held, uuids)
        # Held but not moving, while others are new: the new claim replaces
        # those, atomically, and what they hold is room for it.
        replace = [u for u in held if u not in moving]
        freed = usage.freed_by(held[u] for u in replace)
        # Where the hinted instances are: once per request, not per attempt
        # (they are not this request's to move). A moving consumer is
        # leaving its host, so it counts there no more than a replaced one.
        spec = retry(self.with_hint_hosts)(spec, replace + moving)
        group = spec.instance_group
        rule = None
        if group is not None and group.uuid and group.is_hard:
            rule = GroupRule(group.uuid, group.policy,
                             group.max_server_per_host)
        attempts = Attempts(self.conf.scheduler.claim_retries, self.chooser)
        for attempt in attempts:
            plan_spec = retry(self.with_group_members)(
                spec, replace + moving, leaving={held[u].host for u in moving})
            try:
                # Whatever happens once the usage is assumed, the claim
                # is settled and, unless won, forgotten (Assumption).
                with Assumption(self) as assumption:
                    # After a lost race, re-read SQL whatever the driver's
                    # habit.
                    with self.cycle(fresh=attempt > 0) as table:
                        try:
                            selections = self.plan(
                                plan_spec,
                                attempts.table(table).releasing(freed),
                                spread=attempts.spread)
                        except exception.NoValidHost as e:
                            raise attempts.refusal(e) from None
                        assumption.assume(
                            ((s.host, spec.flavor) for s in selections),
                            [s.claim(spec) for s in selections])
                    claiming = time.perf_counter()
                    try:
                        # A plan on the usage another claim of this
                        # process assumed is claimed once that claim is
                        # won: lost, the generation it was to leave may be
                        # another writer's (an agent's, another server's
                        # claim).
                        assumption.claim(lambda: retry(self.claims.claim)(
                            assumption.to_claim, group=rule,
                            replace=replace, move=moving,
                            moving_from={u: (held[u].compute_node_id,
                                             held[u].source_node_id)
                                         for u in moving},
                            confirm_on_arrival=moves.confirmed_on_arrival(
                                spec),
                            ttl=self.conf.scheduler.unconfirmed_claim_ttl,
                            default_ratios=self.host_manager.default_ratios))
                    finally:
                        trace.add(trace.CLAIM,
                                  time.perf_counter() - claiming)
            except NoRoom as e:
                if spec.force_hosts or spec.force_nodes:
                    # Forcing skips the filters, never the capacity check,
                    # and re-planning cannot pick another host.
                    trace.refused(trace.CLAIM_REFUSAL)
                    raise exception.NoValidHost(
                        f"No valid host: the forced host has no room: {e}")
                attempts.no_room(e, selections)
                continue
            except ClaimConflict as e:
                attempts.conflicted(e, [spec])
                continue
            except ConsumerExists:
                if optimistic:
                    raise _AlreadyHeld() from None
                metrics.claim_conflict("duplicate")
                # A concurrent duplicate of this request claimed first.
                held = retry(allocations.placements)(self.engine, uuids)
                if allocations.holds_all(held, spec.num_instances):
                    return self._answer_held(held, uuids)
                replace = [u for u in held if u not in moving]
                freed = usage.freed_by(held[u] for u in replace)
                continue
            return [destination(spec, s) for s in selections]
        raise attempts.given_up()

    def _end_arrived_moves(self, spec: RequestSpec,
                           held: dict[str, sa.Row]) -> dict[str, sa.Row]:
        """``held``, after confirming the moves that ``spec`` says are
        over (:func:`scheduler.request.moves.arrived`): the new request moves the
        consumer from where it arrived, not from the source it left."""
        if not any(row.source_node_id is not None for row in held.values()):
            return held
        retry = db_retry.for_conf(self.conf)
        arrived = [u for u, h in retry(allocations.holdings)(
                       self.engine, list(held)).items()
                   if moves.arrived(spec, held[u], h)]
        if not arrived:
            return held
        retry(claim_moves.confirm_move)(self.engine, arrived)
        return retry(allocations.placements)(self.engine, list(held))

    def _answer_held(self, held: dict[str, sa.Row], uuids: list[str]
                     ) -> list[dict[str, Any]]:
        """Answer a re-send with what its consumers hold, handing their
        provisional claims out again: their TTL restarts from this
        answer, the caller's time to build runs from the reply it gets."""
        retry = db_retry.for_conf(self.conf)
        retry(lifecycle.renew)(self.engine, uuids,
                               self.conf.scheduler.unconfirmed_claim_ttl)
        moving = [u for u in uuids if held[u].source_node_id is not None]
        if moving:
            # Nova's own request for a move a drain planned: the move has
            # begun, a cancelled drain must leave it be.
            retry(drains.begin)(self.engine, moving)
        return [held_destination(held[u]) for u in uuids]

    def _rebuild_check(self, spec: RequestSpec,
                       held: dict[str, sa.Row]) -> list[dict[str, Any]]:
        """Nova's rebuild check: run the filters on the instance's current
        host (see :func:`scheduler.decide.rebuild.check_spec`) and claim
        nothing.

        :raises InvalidRequest: no destination, forced host or claim names
            the current host.
        :raises NoValidHost: the host no longer passes the filters.
        """
        check = self._resolved(rebuild.check_spec(spec, held))
        # Inside the cycle so it never plans on a half-refreshed table;
        # nothing is assumed because nothing is claimed.
        with self.cycle() as table:
            selections = self.plan(check, table)
        return [destination(check, s) for s in selections]

    def _resolved(self, spec: RequestSpec) -> RequestSpec:
        """``spec`` with everything the planner reads from the claims: the
        group's members and the hosts of hinted instances (for a dry run:
        nothing of the request is replaced)."""
        return self.with_group_members(self.with_hint_hosts(spec, []), [])

    def with_hint_hosts(self, spec: RequestSpec,
                         replace: list[str]) -> RequestSpec:
        """``spec`` with ``hint_hosts`` filled: where the instances named by
        its ``same_host`` / ``different_host`` hints hold claims, else (nova's
        databases as the host source) where nova's cells have them. One
        query, and none at all without such hints."""
        uuids = [u for name in HOST_HINTS for u in spec.hinted_uuids(name)]
        if not uuids:
            return spec
        # As for group members: a consumer this request re-claims is not
        # on the host of its old claim any more.
        with self.engine.connect() as conn:
            hosts = allocations.consumer_hosts(conn, uuids, exclude=replace)
        external = self.host_manager.external
        unknown = [u for u in uuids if u not in hosts and u not in replace]
        if unknown and external is not None:
            hosts.update((u, (h,)) for u, h in
                         external.instance_hosts(unknown).items())
        return dataclasses.replace(spec, hint_hosts=hosts)

    def with_group_members(self, spec: RequestSpec, replace: list[str],
                            leaving: Collection[str] = ()) -> RequestSpec:
        """``spec`` with its server group's ``hosts`` completed from the
        claims this service holds (one entry per member): those claimed
        for the group, and those of the instances named in its
        ``members`` (nova's anti-affinity and soft weighers count the
        members on a host). ``replace``: consumers this request claims
        again, members nowhere else; ``leaving``: the hosts its moving
        consumers are on."""
        group = spec.instance_group
        if group is None or not (group.uuid or group.members):
            return spec
        # Consumers this request re-claims are not members elsewhere: their
        # old claims are released in the same transaction.
        with self.engine.connect() as conn:
            members = allocations.member_hosts(
                conn, group.uuid, list(group.members), exclude=replace)
        hosts = list(members.elements())
        # nova's hosts name the host a moving member is on; under
        # anti-affinity it is not its own neighbour there (nova's filter
        # passes that host for it: a resize to the same host). Under
        # affinity that host stays where the group is.
        skip = set(members) | (
            set(leaving) if group.policy == "anti-affinity" else set())
        hosts += [h for h in group.hosts if h not in skip]
        return dataclasses.replace(spec, instance_group=dataclasses.replace(
            group, hosts=tuple(hosts)))

    def _assume(self, placed: Iterable[tuple[HostState, Flavor]]
                ) -> list[int]:
        """Put the planned usage in the table before claiming (inside the
        cycle): the hosts (as read) as the claim will leave them (one
        flavor per instance), generation bumped once, and tell the chooser
        they are being claimed. :returns: their node ids, to
        :meth:`HostManager.forget` if the claim fails; the caller must pass
        them to ``self.chooser.claimed`` once the claim is over, and its
        claims to :meth:`HostManager.await_assumed` before it and to
        :meth:`HostManager.settle` after it."""
        after: dict[int, HostState] = {}
        for host, flavor in placed:
            state = after.get(host.node_id, host)
            # One claim writes a node once, however many instances it
            # places there: the generation as read, plus one.
            after[host.node_id] = state.consumed(
                flavor.vcpus, flavor.memory_mb, flavor.disk_gb,
                generation=host.generation + 1)
        assumed = list(after.values())
        self.host_manager.assume(assumed)
        # Marked inside the cycle: the next decision of this process
        # already knows these nodes are being claimed.
        self.chooser.claiming([(s.node_id, s.generation) for s in assumed])
        return list(after)


class _AlreadyHeld(Exception):
    """A consumer of a request placed without reading its claims first
    holds one (the claim was rolled back)."""


def _nothing_depends_on_held(spec: RequestSpec) -> bool:
    """Whether ``spec`` may be planned before reading what its consumers
    hold: only a rebuild, a declared move, a server group (its members
    exclude the request's own consumers) and host hints (likewise) read
    it while planning. A held consumer of any other request is found by
    the claim's unique key."""
    return not (spec.is_rebuild or spec.move
                or spec.instance_group is not None
                or any(spec.hinted_uuids(name) for name in HOST_HINTS))
