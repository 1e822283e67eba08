"""ServerGroupAffinityFilter, ServerGroupAntiAffinityFilter: hard server
group policies.

The group's ``hosts`` hold one entry per member already placed: what the
caller sent, plus the members this service has claims for, plus the
instances placed earlier in the same request. The claim re-checks the policy
inside its transaction, so concurrent boots of one group cannot break it
either (nova's race).
"""
from __future__ import annotations

import collections

import numpy as np

from scheduler.filters.base import BaseFilter


class ServerGroupAntiAffinityFilter(BaseFilter):
    reason = "server group anti-affinity: host already holds a member"

    def filter_all(self, hosts, spec):
        group = spec.instance_group
        if group is None or group.policy != "anti-affinity":
            return list(hosts)
        counts = collections.Counter(group.hosts)
        limit = group.max_server_per_host
        return [h for h in hosts if counts[h.host] < limit]

    def host_passes(self, host, spec) -> bool:
        return bool(self.filter_all([host], spec))

    def filter_columns(self, view, idx, spec):
        group = spec.instance_group
        if group is None or group.policy != "anti-affinity" or \
                not group.hosts:
            return idx
        counts = collections.Counter(group.hosts)
        full = [h for h, n in counts.items()
                if n >= group.max_server_per_host]
        return idx[~view.on_hosts(full)[idx]]

    def room(self, view, idx, spec):
        group = spec.instance_group
        if group is None or group.policy != "anti-affinity":
            return None
        counts = collections.Counter(group.hosts)
        return np.array([max(group.max_server_per_host
                             - counts[view.state(i).host], 0)
                         for i in idx.tolist()], np.int64)

    def explain(self, spec) -> str:
        # The group's rule, not the default one: with max_server_per_host
        # above 1 a host holding a member passes.
        group = spec.instance_group
        if group is None or group.max_server_per_host <= 1:
            return self.reason
        return (f"server group anti-affinity: host already holds "
                f"{group.max_server_per_host} members (max_server_per_host)")


class ServerGroupAffinityFilter(BaseFilter):
    reason = "server group affinity: host holds no member"

    def filter_all(self, hosts, spec):
        group = spec.instance_group
        if group is None or group.policy != "affinity" or not group.hosts:
            return list(hosts)
        wanted = set(group.hosts)
        return [h for h in hosts if h.host in wanted]

    def host_passes(self, host, spec) -> bool:
        return bool(self.filter_all([host], spec))

    def filter_columns(self, view, idx, spec):
        group = spec.instance_group
        if group is None or group.policy != "affinity" or not group.hosts:
            return idx
        return idx[view.on_hosts(set(group.hosts))[idx]]
