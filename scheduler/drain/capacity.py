"""capacity: how many more instances like a spec fit now, and where.

The hosts a request of that spec could go to are found as for a real one
(targeting, then every enabled filter, on the table with the claims'
usage); each then takes as many more as the tightest filter's
``room`` says (:meth:`scheduler.filters.base.BaseFilter.room`: capacity
under the ratio in force, instance and I/O counts, anti-affinity members).
Filters whose verdict does not change with usage planned let a passing
host take any number. Nothing is claimed.

``without_hosts`` asks "if these were drained": their instances are first
planned off them, all together, as a drain would move them
(:mod:`scheduler.drain.drain`), and the count is made on what that plan
leaves, those hosts excluded.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any

import numpy as np

from scheduler import exception
from scheduler.db import retry as db_retry
from scheduler.decide import targeting
from scheduler.drain import residents as residents_mod
from scheduler.drain import drain
from scheduler.drain.drain import known_host
from scheduler.drain.residents import Resident
from scheduler.filters.base import explain
from scheduler.filters.base import run_filters
from scheduler.hosts.manager import HostManager
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.request.spec import RequestSpec
from scheduler.stacks import planner

#: The most ``without_hosts`` a question may name (checked at the edge).
MAX_WITHOUT = 100


def capacity(driver, spec: RequestSpec,
             without_hosts: list[str] = ()) -> dict[str, Any]:
    """How many more instances like ``spec`` (one instance) fit.

    :returns: ``{"total", "by_zone": {zone: n}, "by_aggregate": {name:
        n}, "hosts": hosts that take at least one}``; with a total of 0
        also ``"why"``: what each filter removed.
    :raises InvalidRequest: ``spec`` asks for more than one instance or
        for nothing at all (any number fits), an unknown host in
        ``without_hosts``, or a driver that cannot plan.
    :raises NoValidHost: an instance of ``without_hosts`` could not be
        moved off them (naming it and why): the question has no answer.
    """
    if not hasattr(driver, "plan_on"):
        raise exception.InvalidRequest(
            f"capacity: driver {driver.conf.scheduler.driver!r} does not "
            f"answer capacity questions")
    if spec.num_instances != 1:
        raise exception.InvalidRequest(
            f"spec: capacity asks about one instance like it, not "
            f"{spec.num_instances}")
    retry = db_retry.for_conf(driver.conf)
    drained = _known_hosts(driver.host_manager, without_hosts)
    spec = driver._resolved(spec)
    on, groups = _residents(driver, drained, retry)
    pipeline = driver.pipeline
    with driver.cycle() as table:
        moves: dict[str, RequestSpec] = {}
        for host, residents in on.items():
            moves.update(drain.move_specs(
                driver, drain.state_in(table, host), residents, False,
                groups, ignore=tuple(drained)))
        view = _after_draining(driver, table, moves, drained)
        spec = dataclasses.replace(spec, ignore_hosts=tuple(
            spec.ignore_hosts) + tuple(drained))
        idx, forced, steps = targeting.apply(spec, view,
                                             table.all_positions())
        if not forced:
            idx, filter_steps = run_filters(pipeline.filters, view, idx,
                                            spec)
            steps += filter_steps
        room = np.full(len(idx), np.inf)
        for f in pipeline.filters:
            limit = f.room(view, idx, spec)
            if limit is not None:
                room = np.minimum(room, limit)
        if np.isinf(room).any():
            raise exception.InvalidRequest(
                "spec: the flavor needs no vCPU, RAM or disk a host is "
                "judged on: any number of them fits")
        return _answer(driver, view, idx, room, steps, len(table))


def _known_hosts(manager: HostManager, hosts: list[str]) -> list[str]:
    """``hosts`` as the host table names them
    (:func:`scheduler.drain.drain.known_host`).
    :raises InvalidRequest: one is no compute host."""
    return list(dict.fromkeys(
        known_host(manager, host, "without_hosts").host for host in hosts))


def _residents(driver, drained: list[str], retry
               ) -> tuple[dict[str, list[Resident]], dict[str, Any]]:
    """The instances on each drained host, and their hard groups resolved
    (:func:`scheduler.drain.drain.resolve_groups`)."""
    on = {host: retry(residents_mod.on_host)(driver.engine, host)
          for host in drained}
    everyone = [r for residents in on.values() for r in residents]
    return on, retry(drain.resolve_groups)(driver, everyone, set(drained))


def _after_draining(driver, table: HostTable,
                    moves: dict[str, RequestSpec],
                    drained: list[str]) -> HostView:
    """A view of ``table`` with the drained hosts' instances planned off
    them (their usage on the other hosts).
    :raises NoValidHost: one of them cannot move."""
    try:
        return planner.plan_together(driver, table, moves).view
    except planner.Stuck as stuck:
        raise exception.NoValidHost(
            f"No valid host: without {planner.name_list(drained)}, "
            f"instance {stuck.name} could not move anywhere, so there is "
            f"no capacity to count: {stuck.reason}") from None


def _answer(driver, view: HostView, idx: np.ndarray, room: np.ndarray,
            steps, total: int) -> dict[str, Any]:
    """The counts, summed over the table's zone masks and aggregate
    memberships (whole columns: per host in Python it took tens of ms at
    10,000 hosts)."""
    default_zone = driver.conf.filter_scheduler.default_availability_zone
    room = room.astype(np.int64)
    by_zone: collections.Counter = collections.Counter()
    for zone in view.zones:
        by_zone[zone] += int(room[view.take_zone(zone, idx)].sum())
    by_zone[default_zone] += int(room[view.take("no_zone", idx)].sum())
    per_membership = np.bincount(view.take("membership", idx),
                                 weights=room,
                                 minlength=len(view.memberships))
    by_aggregate: collections.Counter = collections.Counter()
    for n, aggregates in zip(per_membership.tolist(), view.memberships):
        for aggregate in aggregates:
            by_aggregate[aggregate.name] += int(n)
    out: dict[str, Any] = {
        "total": int(room.sum()),
        "by_zone": {z: n for z, n in sorted(by_zone.items()) if n},
        "by_aggregate": {a: n for a, n in sorted(by_aggregate.items())
                         if n},
        "hosts": int((room > 0).sum())}
    if not out["total"]:
        out["why"] = explain(steps, total) if len(idx) == 0 else (
            f"{len(idx)} host(s) passed the filters, none has room for "
            f"one more")
    return out
