"""Request targeting: ignore_hosts, force_hosts/force_nodes and
requested_destination narrow the candidates before any filter runs.

``requested_destination.aggregates`` follows nova (placement's
``member_of``): each entry is a comma-separated set of aggregates, the host
must be in at least one aggregate of every entry. nova names aggregates by
uuid; here a name works too, since ``scheduler-manage aggregate`` works by
name.

Nova's semantics: host names match case-insensitively, node names exactly;
a forced host skips the filters (the operator asked for it), while a
requested destination only narrows the list and the filters still run.
Nova 34 still asks placement for a forced host, with its mandatory request
filters, so a forced host must be enabled and, if an aggregate has the
requested zone, in it. Each narrowing is reported as a step, so an
explanation shows it.
(Forcing never overcommits here, though: the claim still checks capacity.)
"""
from __future__ import annotations

import numpy as np

from scheduler.filters.base import SAMPLE_SIZE
from scheduler.filters.base import FilterStep
from scheduler.filters.base import narrow
from scheduler.host_table import HostView
from scheduler.request_spec import host_key
from scheduler.request_spec import RequestSpec


def apply(spec: RequestSpec, view: HostView, idx: np.ndarray
          ) -> tuple[np.ndarray, bool, list[FilterStep]]:
    """Narrow the hosts at positions ``idx`` for ``spec``.

    :returns: the remaining positions, whether they were forced (filters
        must be skipped), and a step per narrowing that removed hosts.
    """
    steps: list[FilterStep] = []
    lower = view.host_names_lower
    if spec.ignore_hosts:
        ignored = [host_key(h) for h in spec.ignore_hosts]
        idx = narrow(view, idx, ~np.isin(lower[idx], ignored),
                     "ignore_hosts", "ignored by the request", steps)
    forced = bool(spec.force_hosts or spec.force_nodes)
    if spec.force_hosts:
        wanted = [host_key(h) for h in spec.force_hosts]
        # Name a forced host that does not exist: a typo would otherwise
        # read as "no room".
        unknown = [h for h, known in zip(spec.force_hosts,
                                         np.isin(wanted, lower)) if not known]
        reason = "not a forced host"
        if unknown:
            # A few of them: a refusal stays a line, whatever was sent.
            reason += ("; no compute host is named "
                       + ", ".join(unknown[:SAMPLE_SIZE]))
            if len(unknown) > SAMPLE_SIZE:
                reason += f" (and {len(unknown) - SAMPLE_SIZE} more)"
        idx = narrow(view, idx, np.isin(lower[idx], wanted),
                     "force_hosts", reason, steps)
    if spec.force_nodes:
        keep = np.isin(view.node_names[idx], list(spec.force_nodes))
        idx = narrow(view, idx, keep, "force_nodes", "not a forced node",
                     steps)
    if forced:
        idx = _prefilter_forced(spec, view, idx, steps)
    dest = spec.requested_destination
    if dest and dest.get("host"):
        idx = narrow(view, idx, lower[idx] == host_key(dest["host"]),
                     "requested_destination", "not the requested host",
                     steps)
    if dest and dest.get("node"):
        idx = narrow(view, idx, view.node_names[idx] == dest["node"],
                     "requested_destination", "not the requested node",
                     steps)
    for wanted in spec.required_aggregates():
        idx = narrow(view, idx, _in_aggregates(view, idx, wanted),
                     "requested_destination",
                     f"in none of the requested aggregates "
                     f"{', '.join(sorted(wanted))[:80]}", steps)
    return idx, forced, steps


def _prefilter_forced(spec: RequestSpec, view: HostView, idx: np.ndarray,
                      steps: list[FilterStep]) -> np.ndarray:
    """What nova 34 still checks on a forced host: its placement query
    runs before the filters are skipped, with the mandatory request filters
    (nova/scheduler/request_filter.py): ``compute_status_filter`` forbids
    the nodes of disabled services, and ``map_az_to_placement_aggregate``
    keeps the members of the aggregates that have the requested zone, if
    any has it. A forced host that is down but enabled is still taken."""
    idx = narrow(view, idx, ~view.take("service_disabled", idx),
                 "compute_status_filter", "service disabled", steps)
    zone = spec.availability_zone
    if zone and zone in view.zones:
        idx = narrow(view, idx, view.take_zone(zone, idx),
                     "map_az_to_placement_aggregate",
                     f"not in the requested availability zone ({zone})",
                     steps)
    return idx


def _in_aggregates(view: HostView, idx: np.ndarray,
                   wanted: frozenset[str]) -> np.ndarray:
    """Whether each host at ``idx`` is in an aggregate named (by uuid or
    name) in ``wanted``: decided once per distinct aggregate membership."""
    per_membership = np.array(
        [any(a.uuid in wanted or a.name in wanted for a in aggregates)
         for aggregates in view.memberships], np.bool_)
    return per_membership[view.take("membership", idx)]
