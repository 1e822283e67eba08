"""plan_drain and cancel_drain: every instance off a host, all or nothing.

Every instance on the host (:mod:`~scheduler.drain.residents`) gets the
move a move of it would get, and all the moves are planned against each
other on one view of the hosts, as a stack's resources are
(:func:`scheduler.stacks.planner.plan_together`): each sees the usage of
those planned before it, the hardest first. Members of a hard affinity
group on the host move together to one host; anti-affinity members go
where no other member is (the members staying elsewhere counted from the
claims, those moving from the plan). If one instance finds no host,
nothing is claimed and the refusal names it and why, per filter.

Applied, the moves are claimed in one transaction with the drain's records
and the host disabled (:func:`scheduler.claims.drains.apply`); a lost claim
race re-plans, as a stack does. The same drain applied again returns the
plan it applied.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from oslo_log import log as logging

from scheduler import exception
from scheduler import metrics
from scheduler.claims import drains
from scheduler.claims.refusals import ConsumerExists
from scheduler.claims.refusals import NoRoom
from scheduler.db import retry as db_retry
from scheduler.decide.assumed import Assumption
from scheduler.decide.attempts import Attempts
from scheduler.drain import residents as residents_mod
from scheduler.drain.residents import Resident
from scheduler.hosts.planned import ClaimConflict
from scheduler.hosts.state import HostState
from scheduler.hosts.manager import HostManager
from scheduler.request.names import host_key
from scheduler.request.spec import Flavor
from scheduler.request.spec import InstanceGroup
from scheduler.request.spec import RequestSpec
from scheduler.stacks import planner

LOG = logging.getLogger(__name__)


def plan_drain(driver, host: str, apply: bool = False,
               same_aggregate: bool = False) -> dict[str, Any]:
    """Plan (and with ``apply`` claim) a move for every instance on
    ``host``.

    :returns: ``{"host", "moves": [{"consumer_uuid", "from": {"host",
        "nodename"}, "to": {"host", "nodename", "uuid"}}, ...],
        "applied"}``; for a host already draining, the plan its drain
        applied (``"applied": True``) whatever ``apply`` says.
    :raises InvalidRequest: an unknown host, a host draining with the
        other ``same_aggregate``, ``same_aggregate`` for a host in no
        aggregate, or a driver that cannot plan many moves at once.
    :raises NoValidHost: an instance cannot move: names it and why, per
        filter; nothing was claimed.
    """
    if not hasattr(driver, "plan_on"):
        raise exception.InvalidRequest(
            f"plan_drain: driver {driver.conf.scheduler.driver!r} does not "
            f"plan drains")
    retry = db_retry.for_conf(driver.conf)
    state = known_host(driver.host_manager, host)
    host = state.host
    lost = 0
    while True:
        applied = retry(drains.stored)(driver.engine, host)
        if applied is not None:
            if applied["same_aggregate"] != same_aggregate:
                raise exception.InvalidRequest(
                    f"host: {host} is already draining with same_aggregate "
                    f"{applied['same_aggregate']}; cancel that drain first")
            return {"host": host, "moves": applied["moves"],
                    "applied": True}
        result = _place(driver, state, apply, same_aggregate, retry)
        if result is not None:
            return result
        # A concurrent drain of this host (or a move of one of its
        # instances) claimed first: what was applied answers this one.
        lost += 1
        if lost > driver.conf.scheduler.claim_retries:
            raise exception.NoValidHost(
                f"No valid host for the drain of host {host}: its "
                f"instances were moved concurrently {lost} times in a row")


def cancel_drain(driver, host: str) -> int:
    """End the drain of ``host``
    (:func:`scheduler.claims.drains.cancel`); idempotent.
    :returns: how many planned moves were released."""
    retry = db_retry.for_conf(driver.conf)
    return retry(drains.cancel)(driver.engine, host)


def known_host(manager: HostManager, host: str,
               what: str = "host") -> HostState:
    """A state of ``host`` (its aggregates and zone are the host's), named
    as the host table names it: host names match case-insensitively, as
    nova's. Looked up in the table as cached (the request's own cycle
    refreshes it), and only if not found there after a refresh (a host
    just added).
    :raises InvalidRequest: no compute node is on it, naming ``what``."""
    key = host_key(host)
    for table in (manager.cached_table(), manager.table()):
        for state in table.states:
            if host_key(state.host) == key:
                return state
    raise exception.InvalidRequest(f"{what}: no compute host {host!r}")


def _place(driver, state: HostState, apply: bool, same_aggregate: bool,
           retry) -> dict[str, Any] | None:
    """Plan, and with ``apply`` claim, the drain of ``state``'s host; None
    if a concurrent drain or move claimed first."""
    conf = driver.conf
    host = state.host
    on_host = retry(residents_mod.on_host)(driver.engine, host)
    by_uuid = {r.consumer_uuid: r for r in on_host}
    attempts = Attempts(conf.scheduler.claim_retries, driver.chooser,
                        subject=f" for the drain of host {host}")
    for attempt in attempts:
        groups = retry(resolve_groups)(driver, on_host, {host})
        try:
            with Assumption(driver) as assumption:
                with driver.cycle(fresh=attempt > 0) as table:
                    # The host's zone and aggregates as this cycle reads
                    # them, not as when the host was looked up.
                    specs = move_specs(driver, state_in(table, host),
                                       on_host, same_aggregate, groups)
                    try:
                        plan = planner.plan_together(
                            driver, attempts.table(table), specs,
                            spread=attempts.spread)
                    except planner.Stuck as stuck:
                        raise attempts.refusal(exception.NoValidHost(
                            _refusal(host, by_uuid[stuck.name], stuck))
                        ) from None
                    moves = _moves(host, by_uuid, plan)
                    if not apply:
                        return {"host": host, "moves": moves,
                                "applied": False}
                    assumption.assume(
                        ((s.host, plan.specs[u].flavor)
                         for u, chosen in plan.selections.items()
                         for s in chosen),
                        [s.claim(plan.specs[u])
                         for u, chosen in plan.selections.items()
                         for s in chosen])
                rules = {r.group.uuid: r.group for r in on_host if r.group}
                assumption.claim(lambda: retry(drains.apply)(
                    driver.engine, host, same_aggregate, moves,
                    assumption.to_claim, groups=list(rules.values()),
                    moving_from={u: (r.node_id, r.source_node_id)
                                 for u, r in by_uuid.items()},
                    default_ratios=driver.host_manager.default_ratios))
        except NoRoom as e:
            attempts.no_room(e, plan.all_selections())
            continue
        except ClaimConflict as e:
            attempts.conflicted(e, plan.specs.values())
            continue
        except ConsumerExists:
            metrics.claim_conflict("duplicate")
            return None
        LOG.info("Drain of host %s applied: %d move(s) claimed, host "
                 "disabled (%s)", host, len(by_uuid), drains.DRAINING)
        return {"host": host, "moves": moves, "applied": True}
    raise attempts.given_up()


def resolve_groups(driver, on_host: list[Resident], leaving: set[str]
                   ) -> dict[str, InstanceGroup]:
    """group uuid -> the hard group of the instances ``on_host`` (those
    of the hosts ``leaving``), its members' hosts filled in: those that
    stay, from the claims (one read per group); those moving (all of
    ``on_host``) are the plan's to place."""
    moving = [r.consumer_uuid for r in on_host]
    out: dict[str, InstanceGroup] = {}
    for r in on_host:
        if r.group is None or r.group.uuid in out:
            continue
        probe = RequestSpec(instance_uuids=(r.consumer_uuid,),
                            flavor=Flavor(memory_mb=0, vcpus=0, root_gb=0),
                            instance_group=residents_mod.instance_group(
                                r.group))
        out[r.group.uuid] = driver.with_group_members(
            probe, moving, leaving=leaving).instance_group
    return out


def move_specs(driver, state: HostState, on_host: list[Resident],
               same_aggregate: bool, groups: dict[str, InstanceGroup],
               ignore: tuple[str, ...] = ()) -> dict[str, RequestSpec]:
    """consumer uuid -> the spec of its move off ``state``'s host (and
    off the hosts ``ignore``), its group as :func:`resolve_groups`
    resolved it."""
    zone = residents_mod.zone_of(
        state, driver.conf.filter_scheduler.default_availability_zone)
    specs = {}
    for r in on_host:
        spec = residents_mod.move_spec(
            r, state, zone, same_aggregate,
            groups.get(r.group.uuid) if r.group else None)
        if ignore:
            spec = dataclasses.replace(spec, ignore_hosts=tuple(
                dict.fromkeys(spec.ignore_hosts + tuple(ignore))))
        specs[r.consumer_uuid] = spec
    return specs


def state_in(table, host: str) -> HostState:
    """A state of ``host`` in ``table``.
    :raises InvalidRequest: it has no node there any more."""
    for state in table.states:
        if state.host == host:
            return state
    raise exception.InvalidRequest(f"host: no compute host {host!r}")


def _moves(host: str, by_uuid: dict[str, Resident],
           plan: planner.Plan) -> list[dict[str, Any]]:
    """The plan as the RPC answer lists it, by consumer uuid."""
    out = []
    for u in sorted(plan.selections):
        [s] = plan.selections[u]
        out.append({"consumer_uuid": u,
                    "from": {"host": host, "nodename": by_uuid[u].nodename},
                    "to": {"host": s.host.host, "nodename": s.host.nodename,
                           "uuid": s.host.uuid}})
    return out


def _refusal(host: str, resident: Resident, stuck: planner.Stuck) -> str:
    context = (f" (planned after {planner.name_list(stuck.before)})"
               if stuck.before else "")
    return (f"No valid host for instance {resident.describe()} of the "
            f"drain of host {host}{context}; nothing was claimed: "
            f"{stuck.reason}")
