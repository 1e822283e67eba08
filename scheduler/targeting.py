"""Request targeting: ignore_hosts, force_hosts/force_nodes and
requested_destination narrow the candidates before any filter runs.

``requested_destination.aggregates`` follows nova (placement's
``member_of``): each entry is a comma-separated set of aggregates, the host
must be in at least one aggregate of every entry. nova names aggregates by
uuid; here a name works too, since ``scheduler-manage aggregate`` works by
name.

Nova's semantics: host names match case-insensitively, node names exactly;
a forced host skips the filters altogether (the operator asked for it),
while a requested destination only narrows the list and the filters still
run. Each narrowing is reported as a step, so an explanation shows it.
(Forcing never overcommits here, though: the claim still checks capacity.)
"""
from __future__ import annotations

import numpy as np

from scheduler.filters.base import FilterStep
from scheduler.filters.base import narrow
from scheduler.host_table import HostView
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
        ignored = [h.lower() for h in spec.ignore_hosts]
        idx = narrow(view, idx, ~np.isin(lower[idx], ignored),
                     "ignore_hosts", "ignored by the request", steps)
    forced = bool(spec.force_hosts or spec.force_nodes)
    if spec.force_hosts:
        wanted = [h.lower() for h in spec.force_hosts]
        # Name a forced host that does not exist: a typo would otherwise
        # read as "no room".
        unknown = [h for h, known in zip(spec.force_hosts,
                                         np.isin(wanted, lower)) if not known]
        reason = "not a forced host"
        if unknown:
            reason += f"; no compute host is named {', '.join(unknown)}"
        idx = narrow(view, idx, np.isin(lower[idx], wanted),
                     "force_hosts", reason, steps)
    if spec.force_nodes:
        keep = np.isin(view.node_names[idx], list(spec.force_nodes))
        idx = narrow(view, idx, keep, "force_nodes", "not a forced node",
                     steps)
    dest = spec.requested_destination
    if dest and dest.get("host"):
        idx = narrow(view, idx, lower[idx] == dest["host"].lower(),
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


def _in_aggregates(view: HostView, idx: np.ndarray,
                   wanted: frozenset[str]) -> np.ndarray:
    """Whether each host at ``idx`` is in an aggregate named (by uuid or
    name) in ``wanted``: decided once per distinct aggregate membership."""
    per_membership = np.array(
        [any(a.uuid in wanted or a.name in wanted for a in aggregates)
         for aggregates in view.memberships], np.bool_)
    return per_membership[view.take("membership", idx)]
