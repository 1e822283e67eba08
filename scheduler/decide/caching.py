"""caching_scheduler: the filter scheduler on host states kept in memory
and refreshed by a periodic task instead of on every request.

Claims are still checked in SQL, so a stale cache costs a retry, never a
double booking: on a lost claim race the base driver re-reads from SQL. This
process's own claims go into the table at once.
"""
from __future__ import annotations

from scheduler.decide.filter import FilterScheduler


class CachingScheduler(FilterScheduler):
    def host_table(self):
        return self.host_manager.cached_table()

    def cycle(self, fresh: bool = False):
        return self.host_manager.planning(refresh=fresh)

    def run_periodic_tasks(self) -> None:
        self.host_manager.refresh()
