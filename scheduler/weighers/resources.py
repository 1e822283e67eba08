"""RAMWeigher, CPUWeigher, DiskWeigher: prefer hosts with the most free
capacity (spread); a negative multiplier prefers the least (stack)."""
from scheduler.weighers.base import BaseWeigher


class RAMWeigher(BaseWeigher):
    multiplier_option = "ram_weight_multiplier"
    minval = 0

    def weigh(self, host, spec) -> float:
        return host.free_ram_mb


class CPUWeigher(BaseWeigher):
    multiplier_option = "cpu_weight_multiplier"
    minval = 0

    def weigh(self, host, spec) -> float:
        return host.free_vcpus


class DiskWeigher(BaseWeigher):
    multiplier_option = "disk_weight_multiplier"
    minval = 0

    def weigh(self, host, spec) -> float:
        return host.free_disk_gb
