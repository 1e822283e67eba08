"""chance_scheduler: a random host among those that are up, enabled, not
ignored, and have room.

Nova's ChanceScheduler ignored capacity and could hand out a full host; here
the fixed resource filters (and a hard server group's) still apply so a
placement is always one that can be claimed. No weighers, no aggregates, no
zones.
"""
from __future__ import annotations

import random
import time

from scheduler import exception
from scheduler import targeting
from scheduler import trace
from scheduler.drivers.base import Driver
from scheduler.drivers.base import Selection
from scheduler.drivers.filter import FilterScheduler
from scheduler.drivers.filter import with_member_on
from scheduler.filters.base import emptied_by
from scheduler.filters.base import run_filters
from scheduler.filters.compute import ComputeFilter
from scheduler.filters.resources import CoreFilter
from scheduler.filters.resources import DiskFilter
from scheduler.filters.resources import RamFilter
from scheduler.filters.server_group import ServerGroupAffinityFilter
from scheduler.filters.server_group import ServerGroupAntiAffinityFilter
from scheduler.host_table import HostView


class ChanceScheduler(Driver):
    def __init__(self, conf, host_manager, engine):
        super().__init__(conf, host_manager, engine)
        self.filters = [cls(conf) for cls in
                        (ComputeFilter, RamFilter, CoreFilter, DiskFilter,
                         # Hard groups: the claim refuses what breaks them.
                         ServerGroupAffinityFilter,
                         ServerGroupAntiAffinityFilter)]

    def plan(self, spec, table, spread=1):
        # Already a random choice among all that fit: nothing to spread.
        started = time.perf_counter()
        view = HostView(table)
        candidates, _forced, target_steps = targeting.apply(
            spec, view, table.all_positions())
        flavor = spec.flavor
        selections = []
        for index, uuid in enumerate(spec.instance_uuids):
            passed, steps = run_filters(self.filters, view, candidates, spec,
                                        index)
            if not len(passed):
                trace.add(trace.FILTER, time.perf_counter() - started)
                # A later instance's steps count the hosts the earlier
                # ones left, not the table: filter_scheduler's wording.
                steps = steps if index else target_steps + steps
                trace.refused(emptied_by(steps) or emptied_by(target_steps)
                              or trace.REQUEST_REFUSAL)
                raise exception.NoValidHost(FilterScheduler._refusal(
                    spec, index, len(table), steps))
            chosen = int(random.choice(passed))
            selections.append(Selection(uuid, table.states[chosen]))
            if index + 1 < spec.num_instances:
                view.consume(chosen, flavor.vcpus, flavor.memory_mb,
                             flavor.disk_gb)
                candidates = passed
                spec = with_member_on(spec, table.states[chosen].host)
        # No weighing: choosing at random is part of filtering here.
        trace.add(trace.FILTER, time.perf_counter() - started)
        return selections
