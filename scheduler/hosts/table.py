"""HostTable: every host state, and their numbers as NumPy columns.

Host ``i`` is ``states[i]``; its numbers are ``table.<column>[i]``. Built-in
filters and weighers work on whole columns at once (a comparison over 10,000
hosts costs microseconds), while plugin filters keep receiving HostState
objects. A request plans on a :class:`HostView` of the table, which copies
the few usage columns it changes (multi-instance requests) instead of
touching the shared table.

A table is changed only inside the host manager's scheduling cycle
(:meth:`scheduler.hosts.manager.HostManager.planning`): refresh, plan and
"assume" run as one serial step per process, so no planner ever sees a table
half-way through an update. Updating a host (``set``) keeps positions;
adding or removing hosts builds a new table.
"""
from __future__ import annotations

import copy
from typing import Iterable

import numpy as np

from scheduler.hosts import capacity
from scheduler.hosts.state import HostState
from scheduler.request.names import host_key

#: HostState fields mirrored as float64 columns.
NUMERIC = ("vcpus_total", "vcpus_used", "memory_mb_total", "memory_mb_used",
           "disk_gb_total", "disk_gb_used", "cpu_allocation_ratio",
           "ram_allocation_ratio", "disk_allocation_ratio", "num_instances",
           "num_io_ops", "failed_builds", "hypervisor_version")
#: The columns a planned instance changes.
USAGE = ("vcpus_used", "memory_mb_used", "disk_gb_used", "num_instances",
         "num_io_ops")
#: Derived columns: capacity × allocation ratio (:mod:`scheduler.hosts.capacity`),
#: kept beside the rest so a filter does not multiply per request.
LIMITS = {r.limit: (r.total, r.ratio) for r in capacity.RESOURCES}
#: Derived columns of the most of each resource a node takes
#: (:func:`scheduler.hosts.capacity.headroom_columns`): they change with usage.
HEADROOMS = tuple(r.headroom for r in capacity.RESOURCES)
#: HostState's free-capacity properties, mirrored: what the resource
#: weighers weigh, kept here so a weigher hands over a column instead of
#: subtracting two per request (a pass over them, at 100,000 hosts
#: ~50 us). They change with usage.
FREE = ("free_vcpus", "free_ram_mb", "free_disk_gb")


def _set_headroom(columns, i: int, state: HostState) -> None:
    """Set host ``i``'s headroom columns in ``columns`` (a table or a view)
    from ``state``, the host as those columns now hold it."""
    for r in capacity.RESOURCES:
        getattr(columns, r.headroom)[i] = capacity.headroom(
            r, getattr(state, r.total), getattr(state, r.used),
            getattr(state, r.limit))


#: Every column :meth:`HostTable.set` writes.
_SET_COLUMNS = (NUMERIC + FREE + tuple(LIMITS) + HEADROOMS
                + ("service_up", "service_disabled", "usable"))


class HostTable:
    def __init__(self, states: Iterable[HostState]):
        self.states: list[HostState] = list(states)
        n = len(self.states)
        self.positions = {s.node_id: i for i, s in enumerate(self.states)}
        for name in NUMERIC + FREE:
            setattr(self, name, np.fromiter(
                (getattr(s, name) for s in self.states), np.float64, n))
        for name, (total, ratio) in LIMITS.items():
            setattr(self, name, capacity.limit(getattr(self, total),
                                               getattr(self, ratio)))
        for r in capacity.RESOURCES:
            setattr(self, r.headroom, capacity.headroom_columns(
                r, getattr(self, r.total), getattr(self, r.used),
                getattr(self, r.limit)))
        self.everywhere = np.arange(n)
        self.service_up = np.fromiter(
            (s.service_up for s in self.states), np.bool_, n)
        self.service_disabled = np.fromiter(
            (s.service_disabled for s in self.states), np.bool_, n)
        #: HostState.usable, one column to compare.
        self.usable = np.fromiter((s.usable for s in self.states), np.bool_,
                                  n)
        self.host_names = np.array([s.host for s in self.states],
                                   dtype=object)
        self.host_names_lower = np.array([host_key(s.host)
                                          for s in self.states], dtype=object)
        self.node_names = np.array([s.nodename for s in self.states],
                                   dtype=object)
        #: The nodes :meth:`without` left out: they exist, though no plan
        #: on this table may choose them (a refusal must not call them
        #: unknown).
        self.left_out: tuple[HostState, ...] = ()
        self.rebuild_zones()

    def __len__(self) -> int:
        return len(self.states)

    def rebuild_zones(self) -> None:
        """zone -> mask of the hosts in it, and the hosts in no zone; and
        the hosts' aggregate memberships: ``memberships[membership[i]]`` is
        host ``i``'s aggregates, so a per-aggregate setting is decided once
        per distinct membership (hosts share one tuple per membership), and
        ``aggregate_keys`` holds every metadata key any host has. Built
        aside, then put in place: planners never see them half-built."""
        zones: dict[str, np.ndarray] = {}
        n = len(self.states)
        no_zone = np.ones(n, np.bool_)
        numbers: dict[int, int] = {}
        memberships: list[tuple] = []
        membership = np.empty(n, np.int64)
        for i, state in enumerate(self.states):
            k = numbers.get(id(state.aggregates))
            if k is None:
                k = numbers[id(state.aggregates)] = len(memberships)
                memberships.append(state.aggregates)
            membership[i] = k
        aggregate_keys: frozenset[str] = frozenset(
            key for aggregates in memberships
            for agg in aggregates for key in agg.metadata)
        for i, state in enumerate(self.states):
            for zone in state.availability_zones():
                mask = zones.get(zone)
                if mask is None:
                    mask = zones[zone] = np.zeros(n, np.bool_)
                mask[i] = True
                no_zone[i] = False
        self.zones, self.no_zone = zones, no_zone
        self.aggregate_keys = aggregate_keys
        self.memberships, self.membership = memberships, membership

    def set(self, i: int, state: HostState) -> None:
        """Replace host ``i`` (same node) with a newer state. If its
        aggregates changed, call :meth:`rebuild_zones` after the batch."""
        self.states[i] = state
        for name in NUMERIC + FREE:
            getattr(self, name)[i] = getattr(state, name)
        for name, (total, ratio) in LIMITS.items():
            getattr(self, name)[i] = capacity.limit(getattr(state, total),
                                                    getattr(state, ratio))
        _set_headroom(self, i, state)
        self.service_up[i] = state.service_up
        self.service_disabled[i] = state.service_disabled
        self.usable[i] = state.usable

    def releasing(self, usages: Iterable[tuple[int, int, int, int]]
                  ) -> HostTable:
        """This table as if the claims that hold ``usages`` (``(node id,
        vcpus, memory_mb, disk_gb)``, as ``claims.usage.freed_by`` lists them)
        were given back: what a request that replaces those claims plans
        on, since its claim gives them back in the same transaction. The
        columns are copied (the shared table is never changed under its
        readers); nodes not in the table are skipped. Generations stay:
        the claim checks the nodes as read."""
        changed: dict[int, HostState] = {}
        for node_id, vcpus, memory_mb, disk_gb in usages:
            i = self.positions.get(node_id)
            if i is not None:
                changed[i] = changed.get(i, self.states[i]).released(
                    vcpus, memory_mb, disk_gb)
        if not changed:
            return self
        out = copy.copy(self)
        out.states = list(self.states)
        for name in _SET_COLUMNS:
            setattr(out, name, getattr(self, name).copy())
        for i, state in changed.items():
            out.set(i, state)
        return out

    def without(self, node_ids: set[int]) -> HostTable:
        """A new table of every host but the nodes ``node_ids`` (a request
        that must not retry a node); they are its :attr:`left_out`."""
        out = HostTable(s for s in self.states if s.node_id not in node_ids)
        out.left_out = self.left_out + tuple(
            s for s in self.states if s.node_id in node_ids)
        return out

    def all_positions(self) -> np.ndarray:
        """Every position. Always the same array object, so :meth:`take`
        can tell "all hosts" from a subset without looking at it."""
        return self.everywhere

    def on_hosts(self, hosts: Iterable[str]) -> np.ndarray:
        """Mask over every position: True where the node belongs to one of
        ``hosts`` (compute host names, exact). Costs the number of nodes of
        those hosts, not of the table: ``np.isin`` over the name column
        (Python objects) took 5 ms at 10,000 hosts, per call."""
        mask = np.zeros(len(self.states), np.bool_)
        for host in hosts:
            mask[self.positions_of(host)] = True
        return mask

    def positions_of(self, host: str) -> list[int]:
        """The positions of ``host``'s nodes (compute host name, exact)."""
        index = self.__dict__.get("_host_index")
        if index is None:
            # Built once per table (positions and names never change in
            # place; set() keeps both), by whichever caller asks first.
            index = {}
            for i, name in enumerate(self.host_names):
                index.setdefault(name, []).append(i)
            self._host_index = index
        return index.get(host, [])

    def take_zone(self, zone: str, idx: np.ndarray) -> np.ndarray:
        """Membership of the hosts at ``idx`` in ``zone`` (which exists)."""
        mask = self.zones[zone]
        return mask if idx is self.everywhere else mask[idx]

    def take(self, column: str, idx: np.ndarray) -> np.ndarray:
        """``column`` at positions ``idx``: the column itself when ``idx``
        is every host (no gather, no copy), else a gathered copy."""
        values = getattr(self, column)
        return values if idx is self.everywhere else values[idx]


class HostView:
    """One request's view of a table: the table's columns, plus the usage of
    the instances this request has planned so far (copied on first use)."""

    def __init__(self, table: HostTable):
        self.table = table
        self._planned: dict[int, HostState] = {}

    def __getattr__(self, name: str):
        # Columns not overridden by this request come from the table.
        return getattr(self.table, name)

    def take(self, column: str, idx: np.ndarray) -> np.ndarray:
        values = getattr(self, column)
        return values if idx is self.table.everywhere else values[idx]

    def state(self, i: int) -> HostState:
        """Host ``i`` with this request's planned usage."""
        return self._planned.get(i) or self.table.states[i]

    def consume(self, i: int, vcpus: int, memory_mb: int,
                disk_gb: int) -> None:
        """Plan one more instance of this size on host ``i``."""
        if not self._planned:
            # Copy-on-write: the table stays shared.
            for name in USAGE + HEADROOMS + FREE:
                self.__dict__[name] = getattr(self.table, name).copy()
        self._planned[i] = planned = self.state(i).consumed(
            vcpus, memory_mb, disk_gb)
        self.vcpus_used[i] += vcpus
        self.memory_mb_used[i] += memory_mb
        self.disk_gb_used[i] += disk_gb
        self.num_instances[i] += 1
        self.num_io_ops[i] += 1
        _set_headroom(self, i, planned)
        for name in FREE:
            getattr(self, name)[i] = getattr(planned, name)
