"""Capacity and allocation ratios: the one owner of "how much of a node may
be handed out".

The rule (nova's RamFilter/CoreFilter/DiskFilter and their Aggregate*
variants):

- a node's **ratio** is its own column, or the configured default when the
  column is NULL or 0 (``ratio``); with aggregate ratios in force it is the
  smallest value of the ``*_allocation_ratio`` key over the host's
  aggregates, else the node's (``aggregate_ratio``);
- its **limit** is total × ratio (``limit``);
- a request **fits** when it is no larger than the physical total (an
  instance cannot overcommit against itself) and used + need stays within
  the limit (``fits``);
- a node reporting 0 vCPUs is not judged on vCPUs at all (``unjudged``):
  nova's CoreFilter passes it, whatever the request.

The same rule in its shapes sits side by side here — one host (``fits``,
``headroom``), NumPy columns (``headroom_columns``) and the claim's SQL
(``within_sql``) — so the planner and the claim cannot drift apart: the claim
is handed the limit the planner enforced and checks exactly that.

This module imports nothing of the scheduler but ``hosts.aggregates`` (host
states, filters and claims all import it).
"""
from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses
import math

import numpy as np
import sqlalchemy as sa

from scheduler.hosts.aggregates import min_value


@dataclasses.dataclass(frozen=True)
class Resource:
    """One resource as the scheduler names it in each place."""
    name: str            # the ``limits`` key handed to nova
    total: str           # HostState field / column of the physical size
    used: str            # HostState field / column of the usage
    ratio: str           # HostState field (node's ratio, default applied)
    #                      and compute_nodes column (the node's own, or NULL)
    limit: str           # HostTable column of total × ratio
    headroom: str        # HostTable column of the most a node takes
    zero_unjudged: bool  # a node reporting 0 of it is not judged (vCPUs)
    flavor: str          # Flavor field of what one instance needs, and
    #                      allocations column of what one claim holds
    node_total: str      # compute_nodes column of the physical size
    node_used: str       # compute_nodes column of the usage


VCPU = Resource("vcpu", "vcpus_total", "vcpus_used", "cpu_allocation_ratio",
                "vcpus_limit", "vcpus_headroom", True, "vcpus",
                "vcpus", "vcpus_used")
MEMORY = Resource("memory_mb", "memory_mb_total", "memory_mb_used",
                  "ram_allocation_ratio", "memory_mb_limit",
                  "memory_mb_headroom", False, "memory_mb",
                  "memory_mb", "memory_mb_used")
DISK = Resource("disk_gb", "disk_gb_total", "disk_gb_used",
                "disk_allocation_ratio", "disk_gb_limit", "disk_gb_headroom",
                False, "disk_gb", "local_gb", "local_gb_used")
RESOURCES = (VCPU, MEMORY, DISK)


@dataclasses.dataclass(frozen=True)
class Ratios:
    """Allocation ratios for nodes that do not set their own."""
    cpu: float = 16.0
    ram: float = 1.5
    disk: float = 1.0

    @classmethod
    def from_conf(cls, conf) -> Ratios:
        """``[filter_scheduler] *_allocation_ratio``."""
        fs = conf.filter_scheduler
        return cls(fs.cpu_allocation_ratio, fs.ram_allocation_ratio,
                   fs.disk_allocation_ratio)

    def of(self, resource: Resource) -> float:
        return {VCPU: self.cpu, MEMORY: self.ram, DISK: self.disk}[resource]


def ratio(own: float | None, default: float) -> float:
    """A node's ratio: its own, or ``default`` when NULL or 0 (nova: "not
    set")."""
    return own or default


def aggregate_ratio(aggregates: Iterable, resource: Resource,
                    own: float) -> float:
    """The smallest ``<resource ratio>`` metadata value over ``aggregates``
    (objects with a ``metadata`` mapping); ``own`` if none has the key or
    one does not parse as a number (logged once per bad value)."""
    key = resource.ratio
    values = {a.metadata[key] for a in aggregates if key in a.metadata}
    if not values:
        return own
    return min_value(values, own, float, key)


#: The filters that enforce each resource's limit: the node's own ratio,
#: and the aggregate ratio.
FILTERS = {VCPU: ("CoreFilter", "AggregateCoreFilter"),
           MEMORY: ("RamFilter", "AggregateRamFilter"),
           DISK: ("DiskFilter", "AggregateDiskFilter")}


def ratio_in_force(resource: Resource, own: float, aggregates: Iterable,
                   enabled_filters: Iterable[str]) -> float:
    """The ratio a scheduler running ``enabled_filters`` holds a node to:
    the tightest of the enabled filters for ``resource`` (a host passes all
    of them), the node's own when none is enabled (what a claim checks
    then)."""
    enabled = set(enabled_filters)
    plain, per_aggregate = FILTERS[resource]
    ratios = []
    if plain in enabled:
        ratios.append(own)
    if per_aggregate in enabled:
        ratios.append(aggregate_ratio(aggregates, resource, own))
    return min(ratios, default=own)


def limit(total: float, ratio_: float) -> float:
    """How much of a resource may be handed out: total × ratio."""
    return total * ratio_


def unjudged(resource: Resource, total: float) -> bool:
    """Whether a node with this ``total`` of ``resource`` is not judged on
    it: no limit, no physical size — one reporting 0 vCPUs (nova's
    CoreFilter passes it). The rule's one statement: :func:`fits`,
    :func:`headroom`, the claim's refusal and the allocations audit ask
    it; the column and SQL forms below are its shapes (``total == 0``
    where ``resource.zero_unjudged``)."""
    return resource.zero_unjudged and total == 0


def fits(resource: Resource, need: float, total: float, used: float,
         limit_: float) -> bool:
    """Whether ``need`` more fits a node with this ``total``, ``used`` and
    ``limit`` (see the module docstring)."""
    if unjudged(resource, total):
        return True
    return need <= total and used + need <= limit_


def fit_together_columns(resource: Resource, needs: Sequence[float],
                         total: np.ndarray, used: np.ndarray,
                         limit_: np.ndarray) -> np.ndarray:
    """:func:`fits` of several instances on one node, over whole columns:
    each of ``needs`` within the physical total, their sum within the
    limit (each instance fitting after the others, as the filters and the
    claim judge them one by one); true where the node is not judged on
    ``resource``."""
    ok = (max(needs, default=0) <= total) & (used + sum(needs) <= limit_)
    if resource.zero_unjudged:
        ok |= total == 0
    return ok


def count_columns(resource: Resource, need: float, total: np.ndarray,
                  used: np.ndarray, limit_: np.ndarray) -> np.ndarray:
    """How many more instances needing ``need`` each node takes, one after
    the other, each by :func:`fits`: none if ``need`` exceeds the physical
    total, else the most ``k`` with ``used + k * need`` within the limit;
    unbounded (``inf``) where nothing is needed or the node is not judged
    on ``resource``. What ``capacity`` (what-if) counts with."""
    if need <= 0:
        return np.full(len(total), np.inf)
    room = limit_ - used
    k = np.floor(room / need)
    # Division rounds: keep k exactly the largest with k * need <= room.
    k = np.where((k + 1) * need <= room, k + 1, k)
    k = np.where(k * need > room, k - 1, k)
    k = np.where(need <= total, np.maximum(k, 0), 0)
    if resource.zero_unjudged:
        k[total == 0] = np.inf
    return k


def host_fits(resource: Resource, host, need: float,
              ratio_: float | None = None) -> bool:
    """:func:`fits` on a HostState, under ``ratio_`` (default: the node's
    own)."""
    total = getattr(host, resource.total)
    r = getattr(host, resource.ratio) if ratio_ is None else ratio_
    return fits(resource, need, total, getattr(host, resource.used),
                limit(total, r))


def headroom(resource: Resource, total: float, used: float,
             limit_: float) -> float:
    """:func:`headroom_columns` of one node (a table updating one host: a
    NumPy call on one value costs more than the arithmetic)."""
    if unjudged(resource, total):
        return math.inf
    return min(total, limit_ - used)


def headroom_columns(resource: Resource, total: np.ndarray,
                     used: np.ndarray, limit_: np.ndarray) -> np.ndarray:
    """:func:`fits` over whole columns, as the most of ``resource`` each node
    takes: ``need`` fits exactly where ``need <= headroom``. It is the
    smaller of the physical total and what the limit leaves (limit -
    used); unbounded where a node is not judged on the resource.

    Kept per host table (and per request view as it plans), so a filter
    makes one comparison per host instead of four passes. The two forms
    agree exactly: usage and needs are whole numbers, so ``limit - used``
    is exact (a whole number is a multiple of the last-place unit of any
    limit below 2**53), and ``need <= limit - used`` exactly when
    ``used + need <= limit``.
    """
    room = np.minimum(total, limit_ - used)
    if resource.zero_unjudged:
        room[total == 0] = np.inf
    return room


def within_sql(resource: Resource, used, amount, total, ratio_column,
               default, planned_limit):
    """SQL form of the limit half of :func:`fits` for the claim's UPDATE
    (the physical size cannot change under an unchanged generation):
    ``used + amount``
    within ``planned_limit`` (the limit the planner enforced), or, when the
    planner enforced none (NULL: forced host, no such filter), within
    total × (the node's ratio, or ``default`` if it has none)."""
    node_ratio = sa.func.coalesce(sa.func.nullif(ratio_column, 0.0), default)
    ok = used + amount <= sa.func.coalesce(planned_limit, total * node_ratio)
    if resource.zero_unjudged:
        ok = sa.or_(total == 0, ok)
    return ok
