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
explanation shows it, naming a forced or requested host or node that does
not exist (nova 34: "No such host").
(Forcing never overcommits here, though: the claim still checks capacity.)
"""
from __future__ import annotations

import numpy as np

from scheduler.filters.base import SAMPLE_SIZE
from scheduler.filters.base import FilterStep
from scheduler.filters.base import narrow
from scheduler.hosts.table import HostView
from scheduler.request.names import host_key
from scheduler.request.spec import RequestSpec


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
        idx = narrow(view, idx, np.isin(lower[idx], wanted),
                     "force_hosts", "not a forced host" + _unknown(
                         "host", spec.force_hosts, wanted, view),
                     steps)
    if spec.force_nodes:
        nodes = list(spec.force_nodes)
        keep = np.isin(view.node_names[idx], nodes)
        idx = narrow(view, idx, keep, "force_nodes", "not a forced node"
                     + _unknown("node", nodes, nodes, view),
                     steps)
    if forced:
        idx = _prefilter_forced(spec, view, idx, steps)
    dest = spec.requested_destination
    if dest and dest.get("host"):
        key = host_key(dest["host"])
        keep = lower[idx] == key
        # Looked up only when nothing is left: then it is the refusal.
        idx = narrow(view, idx, keep, "requested_destination",
                     "not the requested host" + (
                         "" if keep.any() else _unknown(
                             "host", [dest["host"]], [key], view)),
                     steps)
    if dest and dest.get("node"):
        keep = view.node_names[idx] == dest["node"]
        idx = narrow(view, idx, keep, "requested_destination",
                     "not the requested node" + (
                         "" if keep.any() else _unknown(
                             "node", [dest["node"]], [dest["node"]],
                             view)),
                     steps)
    for wanted in spec.required_aggregates():
        idx = narrow(view, idx, _in_aggregates(view, idx, wanted),
                     "requested_destination",
                     f"in none of the requested aggregates "
                     f"{', '.join(sorted(wanted))[:80]}", steps)
    return idx, forced, steps


def _unknown(kind: str, names: list[str], keys: list[str],
             view: HostView) -> str:
    """``"; no compute host is named x, y"`` for the ``names`` whose
    ``keys`` (as matched: lower-case host names, node names as they are)
    are no ``kind`` ("host" or "node") of ``view``'s whole table nor of
    the nodes left out of it (``HostTable.left_out``: they exist), else
    "". A host or node that does not exist (a typo) must be named, as
    nova 34's "No such host" names it: it would otherwise read as "no
    room" or as the other hosts' fault. A few of them: a refusal stays a
    line, whatever was sent."""
    column = view.host_names_lower if kind == "host" else view.node_names
    left_out = {host_key(s.host) if kind == "host" else s.nodename
                for s in view.left_out}
    unknown = [name for name, key, found
               in zip(names, keys, np.isin(keys, column))
               if not found and key not in left_out]
    if not unknown:
        return ""
    text = f"; no compute {kind} is named " + ", ".join(
        unknown[:SAMPLE_SIZE])
    if len(unknown) > SAMPLE_SIZE:
        text += f" (and {len(unknown) - SAMPLE_SIZE} more)"
    return text


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
