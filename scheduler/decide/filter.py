"""filter_scheduler: targeting, filters, weighers, then a pick among the
``host_subset_size`` best (``scheduler.decide.choice``), instance by instance."""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

import numpy as np
from oslo_log import log as logging

from scheduler.db import allocations
from scheduler.conf import frozen
from scheduler.decide import choice
from scheduler.decide import plugins
from scheduler.decide import rebuild
from scheduler.decide import targeting
from scheduler import trace
from scheduler.db import retry as db_retry
from scheduler.decide.base import Driver
from scheduler.decide.selection import Selection
from scheduler.filters.base import BaseFilter
from scheduler.filters.base import emptied_by
from scheduler.filters.base import explain
from scheduler.filters.base import FilterStep
from scheduler.filters.base import run_filters
from scheduler.filters.resources import CoreFilter
from scheduler.filters.resources import DiskFilter
from scheduler.filters.resources import RamFilter
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.request.spec import RequestSpec
from scheduler.weighers.base import Weighing
from scheduler.weighers.base import weigh

LOG = logging.getLogger(__name__)


#: At most this many hosts of exactly the weight of the subset's last join
#: the subset. Among equals the choice is free (nova takes the first in its
#: list order, or a random one with ``shuffle_best_same_weighed_hosts``),
#: and :mod:`scheduler.decide.choice` uses that freedom: concurrent workers and
#: servers each take one of their own share instead of all taking the
#: first, which only one of them could win. Two workers with
#: ``host_subset_size`` 1, 8 callers, 10,000 hosts: 1,184 claims lost in
#: 1,839 placements without them, 17 in 2,831 with. 32 gives each of up to
#: six shares a tied node of its own in all but about 1 request in 400.
TIES = 32

#: ``narrow(view, idx) -> (positions left, steps)``: see plan_on.
Narrowing = Callable[[HostView, np.ndarray],
                     tuple[np.ndarray, list[FilterStep]]]


def with_member_on(spec: RequestSpec, host: str) -> RequestSpec:
    """The next instance of a request sees this one as a group member."""
    group = spec.instance_group
    if group is None:
        return spec
    return dataclasses.replace(spec, instance_group=dataclasses.replace(
        group, hosts=group.hosts + (host,)))


def alternate(state: HostState, limits: dict[str, float]
              ) -> dict[str, Any]:
    """One alternate of a selection, as every driver returns it: the node's
    uuid too (nova's Selection objects need it)."""
    return {"host": state.host, "nodename": state.nodename,
            "compute_node_uuid": state.uuid, "limits": limits}


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """The filters and weighers one request runs with: replaced as a whole
    on SIGHUP (:meth:`FilterScheduler.reload`), never changed in place, so
    a request in flight keeps the set it started with."""
    filters: tuple
    weighers: tuple
    #: The configuration they were built with (:mod:`scheduler.conf.frozen`):
    #: the request's own settings, such as ``host_subset_size``, come from
    #: here too, so one request never mixes two configurations.
    settings: Any

    @classmethod
    def load(cls, conf) -> Pipeline:
        """The configured filters (with :func:`with_capacity`) and weighers.

        :raises ConfigError: a plugin is not installed or fails to load
            (see :mod:`scheduler.decide.plugins`)."""
        filters = with_capacity(plugins.load_filters(conf), conf)
        weighers = tuple(plugins.load_weighers(conf))
        # Frozen once they are built: a plugin may register options of its
        # own when it loads. From here on they read ``self.conf`` frozen.
        settings = frozen.freeze(conf)
        for plugin in filters + weighers:
            plugin.conf = settings
        return cls(filters, weighers, settings)


#: The stock filter for each capacity a claim checks.
_CAPACITY_FILTERS = (RamFilter, CoreFilter, DiskFilter)


def with_capacity(filters: Sequence[BaseFilter], conf) -> tuple:
    """``filters``, then the stock filter (RamFilter, CoreFilter,
    DiskFilter) for each capacity none of them enforces
    (``BaseFilter.enforces``).

    A claim checks every node's vCPUs, RAM and disk whatever the filters
    (capacity × the node's ratio where no filter set a limit), as nova 34's
    placement checks them before its filters run — and nova 34's own
    ``enabled_filters`` names none of these filters, which left nova for
    placement. A planner that did not check one would choose nodes the
    claim then refuses, and give up after the second although other hosts
    had room.
    """
    covered = set().union(*(f.enforces for f in filters))
    added = tuple(cls(conf) for cls in _CAPACITY_FILTERS
                  if not cls.enforces <= covered)
    if added:
        LOG.info("[filter_scheduler] enabled_filters checks no %s; %s run "
                 "after them, as the claim checks every node's capacity",
                 ", ".join(sorted(set().union(*(f.enforces
                                                for f in added)))),
                 ", ".join(f.name for f in added))
    return tuple(filters) + added


class FilterScheduler(Driver):
    def __init__(self, conf, host_manager, engine):
        super().__init__(conf, host_manager, engine)
        self.pipeline = Pipeline.load(conf)

    @property
    def filters(self) -> tuple:
        return self.pipeline.filters

    @filters.setter
    def filters(self, filters) -> None:
        self.pipeline = dataclasses.replace(self.pipeline,
                                            filters=tuple(filters))

    @property
    def weighers(self) -> tuple:
        return self.pipeline.weighers

    @weighers.setter
    def weighers(self, weighers) -> None:
        self.pipeline = dataclasses.replace(self.pipeline,
                                            weighers=tuple(weighers))

    def reload(self) -> None:
        """Load the filters and weighers the (mutated) configuration names
        and swap them in for the next request; on an error the current set
        stays.

        :raises ConfigError: as :meth:`Pipeline.load`.
        """
        self.pipeline = Pipeline.load(self.conf)

    def plan(self, spec: RequestSpec, table: HostTable,
             spread: int = 1) -> list[Selection]:
        """Nova's loop: each instance is placed on the survivors of the
        previous one's filtering, with the usage already planned; the request
        fails as a whole if any instance finds no host."""
        return self.plan_on(HostView(table), spec, spread)

    def plan_on(self, view: HostView, spec: RequestSpec, spread: int = 1,
                narrow: Narrowing | None = None,
                keep_usage: bool = False,
                pipeline: Pipeline | None = None) -> list[Selection]:
        """:meth:`plan` on a view shared with other requests' plans (a
        stack's resources): the view's planned usage counts.

        ``narrow(view, idx)`` further narrows the candidates after
        targeting, before any filter (a stack's relations between its
        resources; they hold on forced hosts too), returning the positions
        left and a FilterStep per narrowing. With ``keep_usage`` every
        instance's usage is left in ``view``, for whatever is planned next
        (alternates of several instances leave it too: they are weighed on
        it). ``pipeline``: the filters and weighers to run, the current
        ones if None; a caller planning several specs as one request (a
        stack) takes :attr:`pipeline` once and passes it to each, so a
        reload in between does not mix two sets in one request.
        :raises NoValidHost: as :meth:`plan`, the narrowing's steps counted.
        """
        if pipeline is None:
            pipeline = self.pipeline   # one set for the whole request
        clock = time.perf_counter
        started = clock()
        table = view.table
        total = len(table)
        candidates, forced, target_steps = targeting.apply(
            spec, view, table.all_positions())
        if narrow is not None:
            candidates, narrowed = narrow(view, candidates)
            target_steps += narrowed
        subset = choice.subset_size(
            pipeline.settings.filter_scheduler.host_subset_size,
            self.chooser.share) * spread
        flavor = spec.flavor
        selections = []
        # nova (_get_alternate_hosts): the alternates of a multi-instance
        # request come from one list, filtered and weighed again once every
        # instance is planned, and never include a host selected for any of
        # them; a single instance's come from its own weighing.
        late_alternates = spec.return_alternates and spec.num_instances > 1
        chosen_at: list[int] = []    # the view positions of the selections
        for index, uuid in enumerate(spec.instance_uuids):
            if forced:
                passed, steps = candidates, []
            else:
                passed, steps = run_filters(pipeline.filters, view,
                                            candidates, spec, index)
            filtered = clock()
            trace.add(trace.FILTER, filtered - started)
            if not len(passed):
                steps = steps if index else target_steps + steps
                trace.refused(emptied_by(steps) or emptied_by(target_steps)
                              or trace.REQUEST_REFUSAL)
                raise self.refusal(self._refusal(spec, index, total, steps))
            weighing = weigh(pipeline.weighers, view, passed, spec)
            order = weighing.best(subset, ties=TIES)
            # Python ints at once, not a NumPy scalar per host.
            best = passed[order].tolist()
            # The weights: a random pick gives the better hosts nova's
            # chance, the equals of the subset's last sharing its slots.
            chosen = best[self.chooser.pick(
                [(table.states[i].node_id, table.states[i].generation)
                 for i in best],
                weighing.total[order], subset)]
            state = table.states[chosen]
            chosen_at.append(chosen)
            selections.append(Selection(
                uuid, state, self._limits(state, forced, pipeline),
                None if late_alternates else self._alternates(
                    pipeline, spec, view, weighing, (chosen,), forced)))
            started = clock()
            trace.add(trace.WEIGH, started - filtered)
            if (keep_usage or late_alternates
                    or index + 1 < spec.num_instances):
                # The next instance (or resource, or the alternates) sees
                # this one's usage ...
                view.consume(chosen, flavor.vcpus, flavor.memory_mb,
                             flavor.disk_gb)
            if late_alternates or index + 1 < spec.num_instances:
                # ... and membership.
                candidates = passed
                spec = with_member_on(spec, state.host)
        if late_alternates:
            self._late_alternates(pipeline, spec, view, candidates, forced,
                                  selections, chosen_at)
        return selections

    def _late_alternates(self, pipeline: Pipeline, spec: RequestSpec,
                         view: HostView, candidates: np.ndarray,
                         forced: bool, selections: list[Selection],
                         chosen: Sequence[int]) -> None:
        """Set the alternates of every selection of a multi-instance
        request, as nova does: ``candidates`` (the hosts the last instance
        was chosen among) filtered again as for the last instance and
        weighed again, with every instance's usage in ``view`` and every
        chosen host a member of the group in ``spec``; then the best that
        were selected for no instance (``chosen``: their positions), the
        same list for each. Fewer (or none) when few hosts are left."""
        if forced:
            passed = candidates
        else:
            passed, _ = run_filters(pipeline.filters, view, candidates, spec,
                                    len(selections) - 1)
        weighing = weigh(pipeline.weighers, view, passed, spec)
        alternates = self._alternates(pipeline, spec, view, weighing,
                                      chosen, forced)
        for selection in selections:
            selection.alternates = list(alternates)

    def rank(self, spec: RequestSpec, limit: int) -> dict[str, Any]:
        """Dry run of the first instance: every host that passes, best
        first with its weights, and what each filter removed. A rebuild
        is ranked as its check runs
        (:func:`scheduler.decide.rebuild.check_spec`).

        :raises InvalidRequest: a rebuild that names no current host.
        """
        if spec.is_rebuild:
            retry = db_retry.for_conf(self.conf)
            spec = rebuild.check_spec(spec, retry(allocations.placements)(
                self.engine, list(spec.instance_uuids)))
        spec = self._resolved(spec)
        pipeline = self.pipeline
        with self.cycle(fresh=True) as table:
            view = HostView(table)
            candidates, forced, steps = targeting.apply(
                spec, view, table.all_positions())
            if not forced:
                candidates, filter_steps = run_filters(pipeline.filters,
                                                       view, candidates, spec)
                steps += filter_steps
            weighing = weigh(pipeline.weighers, view, candidates, spec,
                             parts=True)
            hosts = []
            for j in weighing.best(limit):
                state = table.states[int(candidates[j])]
                hosts.append({"host": state.host, "nodename": state.nodename,
                              "weight": float(weighing.total[j]),
                              "weights": {name: float(v[j]) for name, v
                                          in weighing.parts.items()}})
            return {"hosts": hosts,
                    "filters": [s.to_primitive() for s in steps],
                    "total": len(table)}

    def _limits(self, host: HostState, forced: bool,
                pipeline: Pipeline | None = None) -> dict[str, float]:
        if forced:
            return {}   # nova: no limits on a forced host
        # Two filters limiting one resource (CoreFilter and
        # AggregateCoreFilter): the host passed both, so the tighter holds.
        limits: dict[str, float] = {}
        for f in (pipeline or self.pipeline).filters:
            for name, value in f.limits(host).items():
                limits[name] = min(value, limits.get(name, value))
        return limits

    def _alternates(self, pipeline: Pipeline, spec: RequestSpec,
                    view: HostView,
                    weighing: Weighing, chosen: Sequence[int],
                    forced: bool) -> list[dict[str, Any]] | None:
        """Up to ``[scheduler] max_attempts`` - 1 of the best weighed
        hosts, best first, none of them at a position in ``chosen`` (the
        hosts selected for the request's instances); None when the request
        does not ask for alternates."""
        if not spec.return_alternates:
            return None
        count = self.conf.scheduler.max_attempts - 1
        ranked = weighing.idx[weighing.best(count + len(chosen))]
        others = [int(i) for i in ranked if i not in chosen][:count]
        return [alternate(s, self._limits(s, forced, pipeline))
                for s in (view.table.states[i] for i in others)]

    @staticmethod
    def _refusal(spec: RequestSpec, index: int, total: int,
                 steps) -> str:
        if not index:
            return "No valid host: " + explain(steps, total)
        # Later instances only see the hosts that survived the earlier ones
        # (nova's loop), so the counts are of those, and say so.
        remaining = steps[0].hosts_in if steps else 0
        found = "a host found for the first" if index == 1 else \
            f"hosts found for the first {index}"
        return (f"No valid host for instance {index + 1} of "
                f"{spec.num_instances} (all or nothing: none was placed); "
                f"with {found}, "
                + explain(steps, remaining, "remaining hosts"))
