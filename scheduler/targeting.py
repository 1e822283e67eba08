"""Request targeting: ignore_hosts, force_hosts/force_nodes and
requested_destination narrow the candidates before any filter runs.

Nova's semantics: host names match case-insensitively, node names exactly;
a forced host skips the filters altogether (the operator asked for it),
while a requested destination only narrows the list and the filters still
run. Each narrowing is reported as a step, so an explanation shows it.
"""
from __future__ import annotations

from typing import Callable

from scheduler.filters.base import FilterStep
from scheduler.filters.base import SAMPLE_SIZE
from scheduler.host_state import HostState
from scheduler.request_spec import RequestSpec


def _narrow(name: str, reason: str, hosts: list[HostState],
            keep: Callable[[HostState], bool],
            steps: list[FilterStep]) -> list[HostState]:
    kept = [h for h in hosts if keep(h)]
    if len(kept) != len(hosts):
        dropped = tuple(h.host for h in hosts if not keep(h))[:SAMPLE_SIZE]
        steps.append(FilterStep(name, len(hosts), len(kept), reason, dropped))
    return kept


def apply(spec: RequestSpec, hosts: list[HostState]
          ) -> tuple[list[HostState], bool, list[FilterStep]]:
    """Narrow ``hosts`` for ``spec``.

    :returns: the remaining hosts, whether they were forced (filters must be
        skipped), and a step per narrowing that removed hosts.
    """
    steps: list[FilterStep] = []
    if spec.ignore_hosts:
        ignored = {h.lower() for h in spec.ignore_hosts}
        hosts = _narrow("ignore_hosts", "ignored by the request", hosts,
                        lambda h: h.host.lower() not in ignored, steps)
    forced = bool(spec.force_hosts or spec.force_nodes)
    if spec.force_hosts:
        wanted = {h.lower() for h in spec.force_hosts}
        hosts = _narrow("force_hosts", "not a forced host", hosts,
                        lambda h: h.host.lower() in wanted, steps)
    if spec.force_nodes:
        nodes = set(spec.force_nodes)
        hosts = _narrow("force_nodes", "not a forced node", hosts,
                        lambda h: h.nodename in nodes, steps)
    dest = spec.requested_destination
    if dest and dest.get("host"):
        host = dest["host"].lower()
        hosts = _narrow("requested_destination", "not the requested host",
                        hosts, lambda h: h.host.lower() == host, steps)
    if dest and dest.get("node"):
        node = dest["node"]
        hosts = _narrow("requested_destination", "not the requested node",
                        hosts, lambda h: h.nodename == node, steps)
    return hosts, forced, steps
