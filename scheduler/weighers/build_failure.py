"""BuildFailureWeigher: avoid hosts where builds recently failed.

The raw value is the node's ``failed_builds`` stat (reset by the compute
node on a successful build); the multiplier is ``[filter_scheduler]
build_failure_weight_multiplier`` (1000000.0) **negated**, so the more
failures the lower the weight. The large default outweighs the resource
weighers; 0 disables it.
"""
from scheduler.weighers.base import BaseWeigher


class BuildFailureWeigher(BaseWeigher):
    multiplier_option = "build_failure_weight_multiplier"
    multiplier_sign = -1.0

    def weigh(self, host, spec) -> float:
        return host.failed_builds

    def weigh_columns(self, view, idx, spec):
        return view.take("failed_builds", idx)
