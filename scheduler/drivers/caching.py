"""caching_scheduler: the filter scheduler on host states cached in memory
and refreshed by a periodic task instead of on every request.

Claims are still checked in SQL, so a stale cache costs a retry, never a
double booking: on a lost claim race the base driver re-reads from SQL, which
also refreshes the cache. This process's own claims go into the cache at
once.
"""
from __future__ import annotations

import dataclasses

from scheduler.drivers.filter import FilterScheduler


class CachingScheduler(FilterScheduler):
    def host_states(self):
        return self.host_manager.cached_states()

    def run_periodic_tasks(self) -> None:
        self.host_manager.host_states()

    def claimed(self, spec, selections) -> None:
        flavor = spec.flavor
        after = {}
        for s in selections:
            current = after.get(s.host.key, s.host)
            after[s.host.key] = current.consumed(
                flavor.vcpus, flavor.memory_mb, flavor.disk_gb)
        # The claim bumped each node's generation once.
        self.host_manager.update_cached(
            [dataclasses.replace(state, generation=state.generation + 1)
             for state in after.values()])
