"""SameHostFilter, DifferentHostFilter: place near or away from instances.

Scheduler hints ``same_host`` / ``different_host`` name instances (one uuid
or a list, checked at the edge: ``RequestSpec``). Where those instances are
is what this service knows from its claims: the driver resolves the uuids to
hosts once per request (``RequestSpec.hint_hosts``) before any filter runs.

- SameHostFilter: with a non-empty ``same_host``, a host passes only if it
  holds at least one of the instances. A host holding none of them fails,
  including a host with no instances at all (nova before Mitaka let those
  through). An instance this service holds no claim for is on no host, so
  a hint naming only such instances leaves no host.
- DifferentHostFilter: with a non-empty ``different_host``, a host passes
  only if it holds none of the instances.

"Host" is the compute host (every node of it), as in nova. Both run once
per request: the instances do not move while it is planned.
"""
from __future__ import annotations

import numpy as np

from scheduler.filters.base import BaseFilter


class _HostHintFilter(BaseFilter):
    hint: str
    #: True: a host must hold one of the instances; False: none of them.
    near: bool
    run_filter_once_per_request = True

    def _hosts(self, spec) -> set[str] | None:
        """The hosts of the hinted instances; None without the hint."""
        if not spec.hinted_uuids(self.hint):
            return None
        return spec.hinted_hosts(self.hint)

    def host_passes(self, host, spec) -> bool:
        hosts = self._hosts(spec)
        return hosts is None or (host.host in hosts) == self.near

    def filter_all(self, hosts, spec):
        wanted = self._hosts(spec)
        if wanted is None:
            return list(hosts)
        near = self.near
        return [h for h in hosts if (h.host in wanted) == near]

    def filter_columns(self, view, idx, spec):
        hosts = self._hosts(spec)
        if hosts is None or (not hosts and not self.near):
            return idx
        if not hosts:
            return idx[:0]
        on = np.isin(view.take("host_names", idx), list(hosts))
        return idx[on if self.near else ~on]

    def explain(self, spec) -> str:
        uuids = spec.hinted_uuids(self.hint)
        if not uuids:
            return self.reason
        known = sum(1 for u in uuids if spec.hint_hosts.get(u))
        return (f"{self.reason} ({known} of {len(uuids)} hinted "
                f"instance(s) placed by this scheduler)")


class SameHostFilter(_HostHintFilter):
    reason = "holds none of the instances in the same_host hint"
    hint = "same_host"
    near = True


class DifferentHostFilter(_HostHintFilter):
    reason = "holds an instance in the different_host hint"
    hint = "different_host"
    near = False
