"""filter_scheduler: targeting, filters, weighers, then a random pick among
the ``host_subset_size`` best, instance by instance."""
from __future__ import annotations

import dataclasses
import random
from typing import Any

from scheduler import exception
from scheduler import plugins
from scheduler import targeting
from scheduler.drivers.base import Driver
from scheduler.drivers.base import Selection
from scheduler.filters.base import explain
from scheduler.filters.base import run_filters
from scheduler.host_state import HostState
from scheduler.request_spec import RequestSpec
from scheduler.weighers.base import weigh_hosts


def _with_member_on(spec: RequestSpec, host: str) -> RequestSpec:
    """The next instance of a request sees this one as a group member."""
    group = spec.instance_group
    if group is None:
        return spec
    return dataclasses.replace(spec, instance_group=dataclasses.replace(
        group, hosts=group.hosts + (host,)))


class FilterScheduler(Driver):
    def __init__(self, conf, host_manager, engine):
        super().__init__(conf, host_manager, engine)
        self.filters = plugins.load_filters(conf)
        self.weighers = plugins.load_weighers(conf)

    def plan(self, spec: RequestSpec, hosts: list[HostState]
             ) -> list[Selection]:
        """Nova's loop: each instance is placed on the survivors of the
        previous one's filtering, with the usage already planned; the request
        fails as a whole if any instance finds no host."""
        total = len(hosts)
        candidates, forced, target_steps = targeting.apply(spec, hosts)
        subset = self.conf.filter_scheduler.host_subset_size
        selections = []
        for index, uuid in enumerate(spec.instance_uuids):
            if forced:
                passed, steps = candidates, []
            else:
                passed, steps = run_filters(self.filters, candidates, spec,
                                            index)
            if not passed:
                raise exception.NoValidHost(self._refusal(
                    spec, index, total,
                    steps if index else target_steps + steps))
            weighed = weigh_hosts(self.weighers, passed, spec)
            chosen = random.choice(weighed[:subset]).host
            selections.append(Selection(
                uuid, chosen, self._limits(chosen, forced),
                self._alternates(spec, weighed, chosen, forced)))
            after = chosen.consumed(spec.flavor.vcpus, spec.flavor.memory_mb,
                                    spec.flavor.disk_gb)
            candidates = [after if h is chosen else h for h in passed]
            spec = _with_member_on(spec, chosen.host)
        # Selections carry the host as read (its generation is what the
        # claim checks), not the copy with this request's usage.
        by_key = {h.key: h for h in hosts}
        for s in selections:
            s.host = by_key[s.host.key]
        return selections

    def rank(self, spec: RequestSpec, limit: int) -> dict[str, Any]:
        """Dry run of the first instance: every host that passes, best
        first with its weights, and what each filter removed."""
        hosts = self.host_manager.host_states()
        candidates, forced, steps = targeting.apply(spec, hosts)
        if not forced:
            candidates, filter_steps = run_filters(self.filters, candidates,
                                                   spec)
            steps += filter_steps
        weighed = weigh_hosts(self.weighers, candidates, spec)
        return {
            "hosts": [{"host": w.host.host, "nodename": w.host.nodename,
                       "weight": w.weight, "weights": w.weights}
                      for w in weighed[:limit]],
            "filters": [s.to_primitive() for s in steps],
            "total": len(hosts),
        }

    def _limits(self, host: HostState, forced: bool) -> dict[str, float]:
        if forced:
            return {}   # nova: no limits on a forced host
        limits: dict[str, float] = {}
        for f in self.filters:
            limits.update(f.limits(host))
        return limits

    def _alternates(self, spec: RequestSpec, weighed, chosen: HostState,
                    forced: bool) -> list[dict[str, Any]] | None:
        if not spec.return_alternates:
            return None
        count = self.conf.scheduler.max_attempts - 1
        return [{"host": w.host.host, "nodename": w.host.nodename,
                 "limits": self._limits(w.host, forced)}
                for w in weighed if w.host is not chosen][:count]

    @staticmethod
    def _refusal(spec: RequestSpec, index: int, total: int,
                 steps) -> str:
        if not index:
            return "No valid host: " + explain(steps, total)
        # Later instances only see the hosts that survived the earlier ones
        # (nova's loop), so the counts are of those, and say so.
        remaining = steps[0].hosts_in if steps else 0
        return (f"No valid host for instance {index + 1} of "
                f"{spec.num_instances} (all or nothing: none was placed); "
                f"of the hosts left after placing the first {index}, "
                + explain(steps, remaining))
