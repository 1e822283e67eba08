"""RamFilter, CoreFilter, DiskFilter: room for the flavor under the node's
allocation ratio.

As in nova, a flavor larger than the node's physical size never fits, however
high the ratio (an instance cannot overcommit against itself), and each
filter reports the limit it enforced.
"""
from scheduler.filters.base import BaseFilter


def _fits(view, idx, need, total: str, limit: str, used: str):
    """Column-wise: physical size, and room under capacity × ratio (the
    same rule as the per-host checks below)."""
    return (need <= view.take(total, idx)) & (
        need <= view.take(limit, idx) - view.take(used, idx))


class RamFilter(BaseFilter):
    reason = "insufficient RAM"

    def host_passes(self, host, spec) -> bool:
        need = spec.flavor.memory_mb
        return need <= host.memory_mb_total and need <= host.free_ram_mb

    def filter_columns(self, view, idx, spec):
        return idx[_fits(view, idx, spec.flavor.memory_mb, "memory_mb_total",
                         "memory_mb_limit", "memory_mb_used")]

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.memory_mb} MB"

    def limits(self, host) -> dict:
        return {"memory_mb": host.memory_mb_limit}


class CoreFilter(BaseFilter):
    reason = "insufficient vCPUs"

    def host_passes(self, host, spec) -> bool:
        if host.vcpus_total == 0:
            return True   # nova: a node reporting no vCPUs is not judged
        need = spec.flavor.vcpus
        return need <= host.vcpus_total and need <= host.free_vcpus

    def filter_columns(self, view, idx, spec):
        return idx[(view.take("vcpus_total", idx) == 0) | _fits(
            view, idx, spec.flavor.vcpus, "vcpus_total", "vcpus_limit",
            "vcpus_used")]

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.vcpus}"

    def limits(self, host) -> dict:
        return {"vcpu": host.vcpus_limit}


class DiskFilter(BaseFilter):
    reason = "insufficient disk"

    def host_passes(self, host, spec) -> bool:
        need = spec.flavor.disk_gb
        return need <= host.disk_gb_total and need <= host.free_disk_gb

    def filter_columns(self, view, idx, spec):
        return idx[_fits(view, idx, spec.flavor.disk_gb, "disk_gb_total",
                         "disk_gb_limit", "disk_gb_used")]

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.disk_gb} GB"

    def limits(self, host) -> dict:
        return {"disk_gb": host.disk_gb_limit}
