"""AggregateRamFilter, AggregateCoreFilter, AggregateDiskFilter: the
RamFilter, CoreFilter and DiskFilter rules with a per-aggregate ratio.

The ratio is the smallest ``ram_allocation_ratio`` /
``cpu_allocation_ratio`` / ``disk_allocation_ratio`` metadata value over the
host's aggregates; a host in no aggregate with the key, or one whose values
do not all parse as numbers, uses its own ratio (logged once per bad value).
As in the plain filters, a flavor larger than the node's physical size never
fits, and the limit enforced (total x ratio) is reported.
"""
from scheduler.filters.base import BaseFilter
from scheduler.filters.utils import aggregate_number


def ram_ratio(host) -> float:
    return aggregate_number(host, "ram_allocation_ratio",
                            host.ram_allocation_ratio, float)


def cpu_ratio(host) -> float:
    return aggregate_number(host, "cpu_allocation_ratio",
                            host.cpu_allocation_ratio, float)


def disk_ratio(host) -> float:
    return aggregate_number(host, "disk_allocation_ratio",
                            host.disk_allocation_ratio, float)


class AggregateRamFilter(BaseFilter):
    reason = "insufficient RAM"

    def host_passes(self, host, spec) -> bool:
        need = spec.flavor.memory_mb
        total = host.memory_mb_total
        return (need <= total
                and need <= total * ram_ratio(host) - host.memory_mb_used)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.memory_mb} MB"

    def limits(self, host) -> dict:
        return {"memory_mb": host.memory_mb_total * ram_ratio(host)}


class AggregateCoreFilter(BaseFilter):
    reason = "insufficient vCPUs"

    def host_passes(self, host, spec) -> bool:
        total = host.vcpus_total
        if total == 0:
            return True   # nova: a node reporting no vCPUs is not judged
        need = spec.flavor.vcpus
        return need <= total and need <= total * cpu_ratio(host) \
            - host.vcpus_used

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.vcpus}"

    def limits(self, host) -> dict:
        return {"vcpu": host.vcpus_total * cpu_ratio(host)}


class AggregateDiskFilter(BaseFilter):
    reason = "insufficient disk"

    def host_passes(self, host, spec) -> bool:
        need = spec.flavor.disk_gb
        total = host.disk_gb_total
        return (need <= total
                and need <= total * disk_ratio(host) - host.disk_gb_used)

    def explain(self, spec) -> str:
        return f"{self.reason}: need {spec.flavor.disk_gb} GB"

    def limits(self, host) -> dict:
        return {"disk_gb": host.disk_gb_total * disk_ratio(host)}
