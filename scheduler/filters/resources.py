"""RamFilter, CoreFilter, DiskFilter: room for the flavor under the node's
allocation ratio.

As in nova, a flavor larger than the node's physical size never fits, however
high the ratio (an instance cannot overcommit against itself), and each
filter reports the limit it enforced.
"""
from scheduler.filters.base import BaseFilter


def _fits(need, total, ratio, used):
    """Column-wise: physical size and room under the ratio (same rule as
    the per-host checks below)."""
    return (need <= total) & (need <= total * ratio - used)


class RamFilter(BaseFilter):
    reason = "insufficient RAM"

    def host_passes(self, host, spec) -> bool:
        need = spec.flavor.memory_mb
        return need <= host.memory_mb_total and need <= host.free_ram_mb

    def filter_columns(self, view, idx, spec):
        return idx[_fits(spec.flavor.memory_mb, view.memory_mb_total[idx],
                         view.ram_allocation_ratio[idx],
                         view.memory_mb_used[idx])]

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
        total = view.vcpus_total[idx]
        return idx[(total == 0) | _fits(spec.flavor.vcpus, total,
                                        view.cpu_allocation_ratio[idx],
                                        view.vcpus_used[idx])]

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
        return idx[_fits(spec.flavor.disk_gb, view.disk_gb_total[idx],
                         view.disk_allocation_ratio[idx],
                         view.disk_gb_used[idx])]

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.disk_gb} GB"

    def limits(self, host) -> dict:
        return {"disk_gb": host.disk_gb_limit}
