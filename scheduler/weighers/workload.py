"""IoOpsWeigher and NumInstancesWeigher: weigh hosts by how busy they are.

- IoOpsWeigher: raw value ``num_io_ops`` (instances building, resizing,
  snapshotting, ...); ``[filter_scheduler] io_ops_weight_multiplier``
  (-1.0) prefers idle hosts.
- NumInstancesWeigher: raw value ``num_instances``; ``[filter_scheduler]
  num_instances_weight_multiplier`` (0.0, off) -- negative spreads,
  positive packs.
"""
from scheduler.weighers.base import BaseWeigher


class IoOpsWeigher(BaseWeigher):
    multiplier_option = "io_ops_weight_multiplier"
    minval = 0

    def weigh(self, host, spec) -> float:
        return host.num_io_ops

    def weigh_columns(self, view, idx, spec):
        return view.take("num_io_ops", idx)


class NumInstancesWeigher(BaseWeigher):
    multiplier_option = "num_instances_weight_multiplier"

    def weigh(self, host, spec) -> float:
        return host.num_instances

    def weigh_columns(self, view, idx, spec):
        return view.take("num_instances", idx)
