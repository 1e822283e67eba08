"""RAMWeigher, CPUWeigher, DiskWeigher: prefer hosts with the most free
capacity (spread); a negative multiplier prefers the least (stack).

As in nova: RAMWeigher and DiskWeigher weigh the *physical* free RAM and
disk (total minus used, ``free_ram_mb`` / ``free_disk_gb``), CPUWeigher the
free vCPUs *under* the allocation ratio (total x ratio minus used). So two
hosts with equal hardware and usage weigh the same on RAM and disk whatever
their ratios; a higher RAM ratio lets a host pass RamFilter, not win.
"""
from scheduler.weighers.base import BaseWeigher


class RAMWeigher(BaseWeigher):
    multiplier_option = "ram_weight_multiplier"
    minval = 0

    def weigh(self, host, spec) -> float:
        return host.free_ram_mb

    def weigh_columns(self, view, idx, spec):
        return view.take("free_ram_mb", idx)


class CPUWeigher(BaseWeigher):
    multiplier_option = "cpu_weight_multiplier"
    minval = 0

    def weigh(self, host, spec) -> float:
        return host.free_vcpus

    def weigh_columns(self, view, idx, spec):
        return view.take("free_vcpus", idx)


class DiskWeigher(BaseWeigher):
    multiplier_option = "disk_weight_multiplier"
    minval = 0

    def weigh(self, host, spec) -> float:
        return host.free_disk_gb

    def weigh_columns(self, view, idx, spec):
        return view.take("free_disk_gb", idx)
