"""Plan every resource of a stack on one view of the hosts.

The resources are planned one after the other on one ``HostView`` of one
host table, so each sees the usage the ones before it planned, with the
driver's own targeting, filters and weighers (``FilterScheduler.plan_on``):
each spec's zone, hints, forcing and server group hold as in a single
request. Between resources of the stack:

- ``same_host`` / ``different_host`` hold both ways: whichever of the two is
  planned second is narrowed to (or away from) the hosts of the first;
- resources that share one host (tied by ``same_host``, directly or
  through others, or in one hard affinity group) are first planned only
  where all of them fit;
- resources in one server group see each other as members (hard policies
  filter, soft ones weigh).

Placement is not creation: relations are symmetric, so the planning order
is free, and a greedy pass in Heat's creation order paints itself into
corners (small servers take the only host a big one fits on). The order is
hardest first — fewest candidate hosts, then most instances, then largest
— and when a resource still finds no host it is moved to the front and the
stack planned again ("squeaky wheel"), a bounded number of times. A
resource that finds no host when planned first cannot be placed at all.

:func:`plan_together` is that planning for any set of specs planned
against each other (a drain's moves too); :func:`plan` is a stack's.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from scheduler.hosts import capacity
from scheduler import exception
from scheduler.decide import targeting
from scheduler.decide.selection import Selection
from scheduler.decide.filter import Pipeline
from scheduler.filters.base import FilterStep
from scheduler.filters.base import narrow
from scheduler.filters.base import run_filters
from scheduler.filters.base import SAMPLE_SIZE
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.request.spec import RequestSpec
from scheduler.stacks.stack import Stack

#: Re-plans with the resource that found no host moved to the front.
MAX_REPAIRS = 10


#: resource name -> the resources it is related to (symmetric).
Pairs = dict[str, set[str]]


@dataclasses.dataclass
class Plan:
    """Where every instance of a stack goes (nothing claimed yet)."""
    selections: dict[str, list[Selection]]   # resource name -> selections
    specs: dict[str, RequestSpec]            # as planned (groups resolved)
    planned_in: list[str]                    # the order that worked
    #: The view planned on: the table with every selection's usage.
    view: HostView | None = None

    def all_selections(self) -> list[Selection]:
        """Every selection, resource after resource."""
        return [s for chosen in self.selections.values() for s in chosen]


class Stuck(Exception):
    """Resource ``name`` found no host (``refusal`` says why), planned
    after the resources ``before``."""

    def __init__(self, name: str, refusal: exception.NoValidHost,
                 before: list[str] = ()):
        super().__init__(name)
        self.name = name
        self.refusal = refusal
        self.before = list(before)

    @property
    def reason(self) -> str:
        """The refusal's explanation without the driver's head: "No valid
        host", and a later instance's "for instance 3 of 5 (all or
        nothing: none was placed)" (:attr:`instance` names it; whoever
        words the refusal says "all or nothing" once)."""
        return _driver_refusal(self.refusal.message)[1]

    @property
    def instance(self) -> str:
        """``instance 3 of 5`` when a later instance of a resource of
        several found no host; else empty."""
        return _driver_refusal(self.refusal.message)[0]


#: The driver's refusal (FilterScheduler._refusal): its head, with which
#: of a multi-instance request's instances found no host.
_DRIVER_REFUSAL = re.compile(
    r"No valid host(?: for (?P<instance>instance \d+ of \d+) \(all or "
    r"nothing: none was placed\))?[:;] ")


def _driver_refusal(message: str) -> tuple[str, str]:
    """(the instance, the explanation) of a driver's refusal."""
    head = _DRIVER_REFUSAL.match(message)
    if head is not None:
        return head["instance"] or "", message[head.end():]
    prefix = "No valid host"
    if message.startswith(prefix):
        return "", message[len(prefix):].lstrip(": ")
    return "", message


def plan(driver, stack: Stack, table: HostTable,
         specs: dict[str, RequestSpec], spread: int = 1) -> Plan:
    """Plan ``specs`` (resource name -> spec, with what the claims say of
    hints and groups already resolved) on ``table``, with the stack's
    relations.

    ``driver`` is a FilterScheduler (it has ``plan_on``); ``spread`` as in
    ``Driver.plan``.
    :raises NoValidHost: naming the resource that found no host and, per
        filter (and per stack relation), why.
    """
    try:
        return plan_together(driver, table, specs, spread, *_pairs(stack))
    except Stuck as stuck:
        raise exception.NoValidHost(_refusal(stack, stuck)) from None


def plan_together(driver, table: HostTable, specs: dict[str, RequestSpec],
                  spread: int = 1, same: Pairs | None = None,
                  apart: Pairs | None = None) -> Plan:
    """Plan ``specs`` (name -> spec, groups and hints resolved) on one
    view of ``table``, each seeing the usage of those planned before it,
    hardest first, re-planning with a resource that found no host moved
    to the front (see the module docstring). ``same`` / ``apart``: pairs
    that share a host / never do (default: none).

    :raises Stuck: a resource found no host even when planned first (or
        after :data:`MAX_REPAIRS` re-plans).
    """
    if not specs:
        return Plan({}, {}, [], HostView(table))
    same = same or {name: set() for name in specs}
    apart = apart or {name: set() for name in specs}
    # One set of filters and weighers for the whole plan: a reload
    # (SIGHUP) while it is planned is for the next request.
    pipeline = driver.pipeline
    order = _hardest_first(pipeline, table, specs)
    repairs = min(MAX_REPAIRS, len(order) - 1)
    for attempt in range(repairs + 1):
        try:
            return _plan_in_order(driver, same, apart, table, specs, order,
                                  spread, pipeline)
        except Stuck as stuck:
            if stuck.name == order[0] or attempt == repairs:
                stuck.before = order[:order.index(stuck.name)]
                raise
            order.remove(stuck.name)
            order.insert(0, stuck.name)
    raise AssertionError("unreachable")


def _hardest_first(pipeline: Pipeline, table: HostTable,
                   specs: dict[str, RequestSpec]) -> list[str]:
    """Resource names, those with the fewest candidate hosts (after
    targeting and filters, on the table as read) first; then more
    instances, more RAM, more vCPUs first; then by name."""
    view = HostView(table)
    counts: dict[str, int] = {}
    hardness = {}
    for name, spec in specs.items():
        # Specs equal but for their consumers filter alike: once for all.
        key = repr(dataclasses.replace(spec, instance_uuids=()))
        if key not in counts:
            idx, forced, _ = targeting.apply(spec, view,
                                             table.all_positions())
            if not forced:
                idx, _ = run_filters(pipeline.filters, view, idx, spec)
            counts[key] = len(idx)
        hardness[name] = (counts[key], -spec.num_instances,
                          -spec.flavor.memory_mb, -spec.flavor.vcpus, name)
    return sorted(specs, key=hardness.__getitem__)


def _plan_in_order(driver, same: Pairs, apart: Pairs, table: HostTable,
                   specs: dict[str, RequestSpec], order: list[str],
                   spread: int, pipeline: Pipeline) -> Plan:
    """One pass in ``order``, every resource with ``pipeline``."""
    view = HostView(table)
    hosts: dict[str, list[str]] = {}         # resource -> hosts planned
    members: dict[str, list[str]] = {}       # group uuid -> hosts planned
    selections: dict[str, list[Selection]] = {}
    planned: dict[str, RequestSpec] = {}
    tied = _closure(same)
    together = _closure(_one_host(same, specs))
    enabled = [f.name for f in pipeline.filters]
    for name in order:
        spec = specs[name]
        # Resources tied by same_host share one host, so their instances
        # are planned one by one, each narrowed to where the first went.
        parts = ([dataclasses.replace(spec, instance_uuids=(u,))
                  for u in spec.instance_uuids]
                 if same[name] else [spec])
        selections[name] = []
        for part in parts:
            part = _with_stack_members(part, members)
            # The first of a set on one host picks the set's host: one with
            # room for all of it (a host with room for this part alone
            # would strand the rest).
            whole = ({other: specs[other] for other in together[name]}
                     if name in together
                     and not together[name] & hosts.keys() else {})
            try:
                chosen = driver.plan_on(
                    view, part, spread,
                    narrow=_relations(name, tied[name] - {name},
                                      apart[name], hosts, whole, enabled),
                    keep_usage=True, pipeline=pipeline)
            except exception.NoValidHost as e:
                raise Stuck(name, e) from None
            selections[name] += chosen
            placed = [s.host.host for s in chosen]
            hosts.setdefault(name, []).extend(placed)
            group = spec.instance_group
            if group is not None and group.uuid:
                members.setdefault(group.uuid, []).extend(placed)
        planned[name] = spec
    return Plan(selections, planned, list(order), view)


def _with_stack_members(spec: RequestSpec,
                        members: dict[str, list[str]]) -> RequestSpec:
    """``spec`` with its group's members planned earlier in the stack."""
    group = spec.instance_group
    if group is None or not members.get(group.uuid):
        return spec
    return dataclasses.replace(spec, instance_group=dataclasses.replace(
        group, hosts=group.hosts + tuple(members[group.uuid])))


def _pairs(stack: Stack) -> tuple[Pairs, Pairs]:
    """same_host and different_host as symmetric maps: resource -> the
    resources it is related to, whichever side named the relation."""
    same: dict[str, set[str]] = {name: set() for name in stack.resources}
    apart: dict[str, set[str]] = {name: set() for name in stack.resources}
    for name, r in stack.resources.items():
        for other in r.same_host:
            same[name].add(other)
            same[other].add(name)
        for other in r.different_host:
            apart[name].add(other)
            apart[other].add(name)
    return same, apart


def _one_host(same: dict[str, set[str]], specs: dict[str, RequestSpec]
              ) -> dict[str, set[str]]:
    """The resources that must share a host with each other: same_host
    (``same``) and hard affinity groups, as a symmetric map over only the
    resources in either (a resource alone in its affinity group is there,
    related to nothing else: its own instances share a host)."""
    out = {name: set(others) for name, others in same.items() if others}
    by_group: dict[str, list[str]] = {}
    for name, spec in specs.items():
        group = spec.instance_group
        if group is not None and group.policy == "affinity":
            # A group without a uuid is that resource's own.
            by_group.setdefault(group.uuid or name, []).append(name)
    for names in by_group.values():
        for name in names:
            out.setdefault(name, set()).update(set(names) - {name})
    return out


def _closure(related: dict[str, set[str]]) -> dict[str, frozenset[str]]:
    """Resource -> every resource it is related to, directly or through
    others, itself included (for same_host: each resource being on one
    host, a with b and b with c puts a with c)."""
    out: dict[str, frozenset[str]] = {}
    for name in related:
        if name in out:
            continue
        found, todo = {name}, [name]
        while todo:
            for other in related[todo.pop()] - found:
                found.add(other)
                todo.append(other)
        for member in found:
            out[member] = frozenset(found)
    return out


def _relations(name: str, same: set[str], apart: set[str],
               hosts: dict[str, list[str]],
               whole: dict[str, RequestSpec], enabled: list[str]):
    """The narrowing for resource ``name``: its relations (``same``: the
    resources tied to it by same_host; ``apart``) with the resources
    already planned, or None. A resource tied by same_host stays on the
    host its first instance took; ``whole`` (the specs of the resources
    sharing its host, by name, when none of them is planned yet) must all
    fit where it goes, under the ``enabled`` filters' ratios."""
    near = [other for other in sorted(same) if other in hosts]
    if same and name in hosts:
        near.append(name)
    away = [other for other in sorted(apart) if other in hosts]
    if not near and not away and not whole:
        return None

    def by_relations(view: HostView, idx: np.ndarray):
        steps: list[FilterStep] = []
        if whole:
            idx = narrow(view, idx, _room_for(view, idx,
                                              list(whole.values()), enabled),
                         "stack one host",
                         "no room for all of " + name_list(sorted(whole)),
                         steps)
        for other in near:
            # Where ``other``'s instances are (one host: see parts above).
            keep = view.on_hosts(hosts[other])[idx]
            idx = narrow(view, idx, keep, "stack same_host",
                         f"holds no instance of {other}", steps)
        if away:
            taken = [h for other in away for h in hosts[other]]
            keep = ~view.on_hosts(taken)[idx]
            idx = narrow(view, idx, keep, "stack different_host",
                         "holds an instance of " + name_list(away), steps)
        return idx, steps
    return by_relations


def _room_for(view: HostView, idx: np.ndarray, specs: list[RequestSpec],
              enabled: list[str]) -> np.ndarray:
    """Mask over ``idx``: the hosts where every instance of ``specs`` fits
    together (:func:`scheduler.hosts.capacity.fit_together_columns`) under the
    ratio the ``enabled`` filters hold each host to
    (:func:`scheduler.hosts.capacity.ratio_in_force`: an aggregate's under an
    Aggregate* filter), as the filters and the claim judge them."""
    keep = np.ones(len(idx), np.bool_)
    for resource in capacity.RESOURCES:
        needs = [getattr(s.flavor, resource.flavor)
                 for s in specs for _ in range(s.num_instances)]
        if capacity.FILTERS[resource][1] in enabled:
            # Per host: the ratio depends on its aggregates.
            limit = np.array([capacity.limit(
                getattr(state, resource.total), capacity.ratio_in_force(
                    resource, getattr(state, resource.ratio),
                    state.aggregates, enabled))
                for state in map(view.state, idx.tolist())], np.float64)
        else:
            limit = view.take(resource.limit, idx)
        keep &= capacity.fit_together_columns(
            resource, needs, view.take(resource.total, idx),
            view.take(resource.used, idx), limit)
    return keep


def name_list(items: list[str]) -> str:
    """``a, b, c (and 4 more)``: a refusal stays a line."""
    shown = ", ".join(items[:SAMPLE_SIZE])
    more = len(items) - SAMPLE_SIZE
    return shown + (f" (and {more} more)" if more > 0 else "")


def _refusal(stack: Stack, stuck: Stuck) -> str:
    """``No valid host for [instance 3 of 5 of] resource 'web' of stack
    S (planned after db); nothing of the stack was claimed: <why>``."""
    context = (f" (planned after {name_list(stuck.before)})"
               if stuck.before else "")
    which = f"{stuck.instance} of " if stuck.instance else ""
    return (f"No valid host for {which}resource {stuck.name!r} of stack "
            f"{stack.stack_id}{context}; nothing of the stack was claimed: "
            f"{stuck.reason}")
