"""HypervisorVersionWeigher: prefer hosts with newer hypervisors (nova's).

The raw value is the node's ``hypervisor_version`` (nova's integer, 1000
per component; 0 when unknown); the multiplier is ``[filter_scheduler]
hypervisor_version_weight_multiplier`` (1.0): positive prefers newer hosts,
which moves new instances off the hosts still to be upgraded, negative
prefers older ones.
"""
from scheduler.weighers.base import BaseWeigher


class HypervisorVersionWeigher(BaseWeigher):
    multiplier_option = "hypervisor_version_weight_multiplier"

    def weigh(self, host, spec) -> float:
        return host.hypervisor_version or 0

    def weigh_columns(self, view, idx, spec):
        return view.take("hypervisor_version", idx)
