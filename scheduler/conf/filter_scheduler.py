"""Options in [filter_scheduler]: filters, weighers and their settings.

Names follow nova's so that an operator's existing settings carry over.
"""
from oslo_config import cfg

GROUP = "filter_scheduler"

opts = [
    cfg.ListOpt("enabled_filters",
                default=["AvailabilityZoneFilter", "ComputeFilter",
                         "RamFilter", "CoreFilter", "DiskFilter"],
                help="Filters run, in this order, by the filter and caching "
                     "drivers; names from the entry-point namespace "
                     "'scheduler.filters'."),
    cfg.ListOpt("weighers", default=["RAMWeigher", "CPUWeigher", "DiskWeigher"],
                deprecated_name="weight_classes",
                help="Weighers applied to the hosts that pass the filters; "
                     "names from the entry-point namespace "
                     "'scheduler.weighers'."),
    cfg.IntOpt("host_subset_size", default=1, min=1,
               help="The instance goes to a random host among this many "
                    "best-weighed hosts. Larger values spread concurrent "
                    "requests and reduce claim races."),
    cfg.FloatOpt("cpu_allocation_ratio", default=16.0, min=0.0,
                 help="vCPU overcommit ratio for nodes that do not report "
                      "their own (a node value of 0 or NULL means unset)."),
    cfg.FloatOpt("ram_allocation_ratio", default=1.5, min=0.0,
                 help="RAM overcommit ratio for nodes that do not report "
                      "their own."),
    cfg.FloatOpt("disk_allocation_ratio", default=1.0, min=0.0,
                 help="Disk overcommit ratio for nodes that do not report "
                      "their own."),
    cfg.FloatOpt("ram_weight_multiplier", default=1.0,
                 help="Multiplier of the RAM weigher. Positive spreads "
                      "instances over hosts with most free RAM; negative "
                      "stacks them."),
    cfg.FloatOpt("cpu_weight_multiplier", default=1.0,
                 help="Multiplier of the CPU weigher (free vCPUs)."),
    cfg.FloatOpt("disk_weight_multiplier", default=1.0,
                 help="Multiplier of the disk weigher (free disk)."),
    cfg.StrOpt("default_availability_zone", default="nova",
               help="Availability zone of hosts that belong to no aggregate "
                    "with an availability_zone key."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
