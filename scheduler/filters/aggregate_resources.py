"""AggregateRamFilter, AggregateCoreFilter, AggregateDiskFilter: the
RamFilter, CoreFilter and DiskFilter rules with a per-aggregate ratio.

The ratio is :func:`scheduler.hosts.capacity.aggregate_ratio`: the smallest
``ram_allocation_ratio`` / ``cpu_allocation_ratio`` /
``disk_allocation_ratio`` metadata value over the host's aggregates; a host
in no aggregate with the key, or one whose values do not all parse as
numbers, uses its own ratio (logged once per bad value). As in the plain
filters, a flavor larger than the node's physical size never fits, and the
limit enforced (total x ratio) is reported, so the claim checks that limit.
"""
import numpy as np

from scheduler.hosts import capacity
from scheduler.filters.base import BaseFilter
from scheduler.filters.resources import resource_room


def _room(resource, ratio, view, idx, need):
    """Room under each host's aggregate ratio (one state per host: the
    ratio depends on its aggregates)."""
    limit = np.array([capacity.limit(getattr(state, resource.total),
                                     ratio(state))
                      for state in map(view.state, idx.tolist())],
                     np.float64)
    return resource_room(resource, view, idx, need, limit)


def ram_ratio(host) -> float:
    return capacity.aggregate_ratio(host.aggregates, capacity.MEMORY,
                                    host.ram_allocation_ratio)


def cpu_ratio(host) -> float:
    return capacity.aggregate_ratio(host.aggregates, capacity.VCPU,
                                    host.cpu_allocation_ratio)


def disk_ratio(host) -> float:
    return capacity.aggregate_ratio(host.aggregates, capacity.DISK,
                                    host.disk_allocation_ratio)


class AggregateRamFilter(BaseFilter):
    reason = "insufficient RAM"
    enforces = frozenset({"memory_mb"})

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.MEMORY, host,
                                  spec.flavor.memory_mb, ram_ratio(host))

    def room(self, view, idx, spec):
        return _room(capacity.MEMORY, ram_ratio, view, idx, spec.flavor.memory_mb)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.memory_mb} MB"

    def limits(self, host) -> dict:
        return {"memory_mb": capacity.limit(host.memory_mb_total,
                                            ram_ratio(host))}


class AggregateCoreFilter(BaseFilter):
    reason = "insufficient vCPUs"
    enforces = frozenset({"vcpu"})

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.VCPU, host, spec.flavor.vcpus,
                                  cpu_ratio(host))

    def room(self, view, idx, spec):
        return _room(capacity.VCPU, cpu_ratio, view, idx, spec.flavor.vcpus)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.vcpus}"

    def limits(self, host) -> dict:
        return {"vcpu": capacity.limit(host.vcpus_total, cpu_ratio(host))}


class AggregateDiskFilter(BaseFilter):
    reason = "insufficient disk"
    enforces = frozenset({"disk_gb"})

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.DISK, host, spec.flavor.disk_gb,
                                  disk_ratio(host))

    def room(self, view, idx, spec):
        return _room(capacity.DISK, disk_ratio, view, idx, spec.flavor.disk_gb)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.disk_gb} GB"

    def limits(self, host) -> dict:
        return {"disk_gb": capacity.limit(host.disk_gb_total,
                                          disk_ratio(host))}
