"""chance_scheduler: a random host among those that are up, enabled, not
ignored, not already tried by the request (``retry``), and have room.

Nova's ChanceScheduler ignored capacity and could hand out a full host; here
the fixed resource filters (and a hard server group's) still apply so a
placement is always one that can be claimed. No weighers, no aggregates, no
zones. Forced hosts skip the filters as in filter_scheduler
(:mod:`scheduler.decide.targeting`); the claim still checks them. Asked for
alternates, it returns, as nova's did, random ones (one fewer than
``[scheduler] max_attempts``), never a selected host, from the hosts that
fit (for several instances: after all of them, as filter_scheduler).
"""
from __future__ import annotations

import random
import time
from typing import Any

import numpy as np

from scheduler.decide import targeting
from scheduler import trace
from scheduler.decide.base import Driver
from scheduler.decide.selection import Selection
from scheduler.decide.filter import alternate
from scheduler.decide.filter import FilterScheduler
from scheduler.decide.filter import with_member_on
from scheduler.filters.base import emptied_by
from scheduler.filters.base import run_filters
from scheduler.filters.compute import ComputeFilter
from scheduler.filters.resources import CoreFilter
from scheduler.filters.resources import DiskFilter
from scheduler.filters.resources import RamFilter
from scheduler.filters.retry import RetryFilter
from scheduler.filters.server_group import ServerGroupAffinityFilter
from scheduler.filters.server_group import ServerGroupAntiAffinityFilter
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView


class ChanceScheduler(Driver):
    def __init__(self, conf, host_manager, engine):
        super().__init__(conf, host_manager, engine)
        self.filters = [cls(conf) for cls in
                        # A rescheduled build never goes back to a
                        # host it already failed on.
                        (RetryFilter, ComputeFilter, RamFilter, CoreFilter,
                         DiskFilter,
                         # Hard groups: the claim refuses what breaks them.
                         ServerGroupAffinityFilter,
                         ServerGroupAntiAffinityFilter)]

    def plan(self, spec, table, spread=1):
        # Already a random choice among all that fit: nothing to spread.
        started = time.perf_counter()
        view = HostView(table)
        candidates, forced, target_steps = targeting.apply(
            spec, view, table.all_positions())
        flavor = spec.flavor
        selections = []
        # As filter_scheduler: a multi-instance request's alternates are
        # filtered again once every instance is planned.
        late_alternates = spec.return_alternates and spec.num_instances > 1
        chosen_at: list[int] = []
        for index, uuid in enumerate(spec.instance_uuids):
            if forced:
                # Targeting's rule, as filter_scheduler applies it: a
                # forced host skips the filters (the claim still checks
                # its capacity and group).
                passed, steps = candidates, []
            else:
                passed, steps = run_filters(self.filters, view, candidates,
                                            spec, index)
            if not len(passed):
                trace.add(trace.FILTER, time.perf_counter() - started)
                # A later instance's steps count the hosts the earlier
                # ones left, not the table: filter_scheduler's wording.
                steps = steps if index else target_steps + steps
                trace.refused(emptied_by(steps) or emptied_by(target_steps)
                              or trace.REQUEST_REFUSAL)
                raise self.refusal(FilterScheduler._refusal(
                    spec, index, len(table), steps))
            chosen = int(random.choice(passed))
            chosen_at.append(chosen)
            selections.append(Selection(uuid, table.states[chosen]))
            if spec.return_alternates and not late_alternates:
                selections[-1].alternates = self._alternates(
                    table, passed, chosen_at)
            if late_alternates or index + 1 < spec.num_instances:
                view.consume(chosen, flavor.vcpus, flavor.memory_mb,
                             flavor.disk_gb)
                candidates = passed
                spec = with_member_on(spec, table.states[chosen].host)
        if late_alternates:
            if not forced:
                candidates, _ = run_filters(self.filters, view, candidates,
                                            spec, len(selections) - 1)
            alternates = self._alternates(table, candidates, chosen_at)
            for selection in selections:
                selection.alternates = list(alternates)
        # No weighing: choosing at random is part of filtering here.
        trace.add(trace.FILTER, time.perf_counter() - started)
        return selections

    def _alternates(self, table: HostTable, passed: np.ndarray,
                    chosen_at: list[int]) -> list[dict[str, Any]]:
        """Up to ``[scheduler] max_attempts`` minus one of the hosts at
        positions ``passed``, at random, none of them selected (at a
        position in ``chosen_at``)."""
        others = np.setdiff1d(passed, chosen_at)
        count = min(self.conf.scheduler.max_attempts - 1, len(others))
        return [alternate(table.states[int(others[j])], {})
                for j in random.sample(range(len(others)), count)]
