"""RamFilter, CoreFilter, DiskFilter: room for the flavor under the node's
allocation ratio.

The rule is :mod:`scheduler.capacity`'s (a flavor larger than the node's
physical size never fits, however high the ratio; a node reporting 0 vCPUs
is not judged on vCPUs); each filter reports the limit it enforced, which the
claim then checks in SQL.
"""
from scheduler import capacity
from scheduler.filters.base import BaseFilter


def _fits_columns(resource, view, idx, need):
    return capacity.fits_columns(resource, need,
                                 view.take(resource.total, idx),
                                 view.take(resource.used, idx),
                                 view.take(resource.limit, idx))


class RamFilter(BaseFilter):
    reason = "insufficient RAM"

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.MEMORY, host,
                                  spec.flavor.memory_mb)

    def filter_columns(self, view, idx, spec):
        return idx[_fits_columns(capacity.MEMORY, view, idx,
                                 spec.flavor.memory_mb)]

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.memory_mb} MB"

    def limits(self, host) -> dict:
        return {"memory_mb": host.memory_mb_limit}


class CoreFilter(BaseFilter):
    reason = "insufficient vCPUs"

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.VCPU, host, spec.flavor.vcpus)

    def filter_columns(self, view, idx, spec):
        return idx[_fits_columns(capacity.VCPU, view, idx,
                                 spec.flavor.vcpus)]

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.vcpus}"

    def limits(self, host) -> dict:
        return {"vcpu": host.vcpus_limit}


class DiskFilter(BaseFilter):
    reason = "insufficient disk"

    def host_passes(self, host, spec) -> bool:
        return capacity.host_fits(capacity.DISK, host, spec.flavor.disk_gb)

    def filter_columns(self, view, idx, spec):
        return idx[_fits_columns(capacity.DISK, view, idx,
                                 spec.flavor.disk_gb)]

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.disk_gb} GB"

    def limits(self, host) -> dict:
        return {"disk_gb": host.disk_gb_limit}
