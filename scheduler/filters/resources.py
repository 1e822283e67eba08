"""RamFilter, CoreFilter, DiskFilter: room for the flavor under the node's
allocation ratio.

The rule is :mod:`scheduler.hosts.capacity`'s (a flavor larger than the node's
physical size never fits, however high the ratio; a node reporting 0 vCPUs
is not judged on vCPUs); each filter reports the limit it enforced, which the
claim then checks in SQL.
"""
from scheduler.hosts import capacity
from scheduler.filters.base import BaseFilter
from scheduler.filters.base import passing


def _fitting(resource, view, idx, need):
    # One comparison against the table's headroom column: the rule
    # (capacity.headroom_columns) was applied when the column was made.
    return passing(idx, view.take(resource.headroom, idx) >= need)


def resource_room(resource, view, idx, need, limit=None):
    """:func:`scheduler.hosts.capacity.count_columns` of the hosts at
    ``idx``, under ``limit`` (default: the table's, the node's ratio)."""
    if limit is None:
        limit = view.take(resource.limit, idx)
    return capacity.count_columns(
        resource, need, view.take(resource.total, idx),
        view.take(resource.used, idx), limit)


class RamFilter(BaseFilter):
    reason = "insufficient RAM"
    enforces = frozenset({"memory_mb"})

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.MEMORY, host,
                                  spec.flavor.memory_mb)

    def filter_columns(self, view, idx, spec):
        return _fitting(capacity.MEMORY, view, idx, spec.flavor.memory_mb)

    def room(self, view, idx, spec):
        return resource_room(capacity.MEMORY, view, idx, spec.flavor.memory_mb)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.memory_mb} MB"

    def limits(self, host) -> dict:
        return {"memory_mb": host.memory_mb_limit}


class CoreFilter(BaseFilter):
    reason = "insufficient vCPUs"
    enforces = frozenset({"vcpu"})

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.VCPU, host, spec.flavor.vcpus)

    def filter_columns(self, view, idx, spec):
        return _fitting(capacity.VCPU, view, idx, spec.flavor.vcpus)

    def room(self, view, idx, spec):
        return resource_room(capacity.VCPU, view, idx, spec.flavor.vcpus)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.vcpus}"

    def limits(self, host) -> dict:
        return {"vcpu": host.vcpus_limit}


class DiskFilter(BaseFilter):
    reason = "insufficient disk"
    enforces = frozenset({"disk_gb"})

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.DISK, host, spec.flavor.disk_gb)

    def filter_columns(self, view, idx, spec):
        return _fitting(capacity.DISK, view, idx, spec.flavor.disk_gb)

    def room(self, view, idx, spec):
        return resource_room(capacity.DISK, view, idx, spec.flavor.disk_gb)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.disk_gb} GB"

    def limits(self, host) -> dict:
        return {"disk_gb": host.disk_gb_limit}
