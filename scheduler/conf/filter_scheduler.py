"""Options in [filter_scheduler]: filters, weighers and their settings.

Names follow nova's so that an operator's existing settings carry over.
Options marked ``mutable`` take effect on SIGHUP without restarting the
workers (filters and weighers are re-loaded as one new set); the others,
such as the allocation ratios baked into the host table, need a restart.
"""
from oslo_config import cfg

GROUP = "filter_scheduler"

#: nova's canonical architecture names (``nova.objects.fields.Architecture``),
#: the choices of image_properties_default_architecture.
ARCHITECTURES = (
    "alpha", "armv6", "armv7l", "armv7b", "aarch64", "cris", "i686", "ia64",
    "lm32", "m68k", "microblaze", "microblazeel", "mips", "mipsel", "mips64",
    "mips64el", "openrisc", "parisc", "parisc64", "ppc", "ppcle", "ppc64",
    "ppc64le", "ppcemb", "s390", "s390x", "sh4", "sh4eb", "sparc", "sparc64",
    "unicore32", "x86_64", "xtensa", "xtensaeb")

opts = [
    cfg.ListOpt("enabled_filters", mutable=True,
                default=["RetryFilter", "AvailabilityZoneFilter",
                         "ComputeFilter", "RamFilter", "CoreFilter",
                         "DiskFilter", "ComputeCapabilitiesFilter",
                         "ImagePropertiesFilter",
                         "ServerGroupAntiAffinityFilter",
                         "ServerGroupAffinityFilter"],
                help="Filters run, in this order, by the filter and caching "
                     "drivers; names from the entry-point namespace "
                     "'scheduler.filters'. The default is nova's classic "
                     "list plus CoreFilter (claims enforce vCPUs anyway, so "
                     "filtering on them explains refusals), with "
                     "ComputeFilter before the resource filters so that "
                     "down hosts are counted as down, not as full. Claims "
                     "check every node's vCPUs, RAM and disk whatever this "
                     "list says (nova 34's placement does), so RamFilter, "
                     "CoreFilter and DiskFilter run after the listed "
                     "filters for any of the three that no listed filter "
                     "checks (nova 34's own list names none of them)."),
    cfg.ListOpt("weighers", mutable=True,
                default=["RAMWeigher", "CPUWeigher", "DiskWeigher",
                         "ServerGroupSoftAffinityWeigher",
                         "ServerGroupSoftAntiAffinityWeigher"],
                deprecated_name="weight_classes",
                help="Weighers applied to the hosts that pass the filters; "
                     "names from the entry-point namespace "
                     "'scheduler.weighers'. Nova's spelling (weight_classes "
                     "= nova.scheduler.weights.ram.RAMWeigher, or "
                     "nova.scheduler.weights.all_weighers for every "
                     "installed weigher) is read too."),
    cfg.IntOpt("host_subset_size", mutable=True, min=1,
               help="The instance goes to one of this many best-weighed "
                    "hosts, or of up to 32 more of exactly the weight of "
                    "the last of them: among equals the choice is free, "
                    "and concurrent workers each take one of their own "
                    "(see host_subset_choice). Larger values spread "
                    "concurrent requests and reduce claim races, at the "
                    "cost of sometimes not taking the very best host. "
                    "Unset (the default): 1 (nova's default, the best "
                    "host) while this is the only scheduler process on "
                    "its topic, 64 while there are more (the workers of "
                    "one server, several servers), so that concurrent "
                    "processes do not all want the same best host and "
                    "lose claims to each other."),
    cfg.StrOpt("host_subset_choice", default="per_process",
               choices=[("random", "nova's: a uniform random pick among "
                                   "the host_subset_size best"),
                        ("per_process", "each scheduler process prefers "
                                        "its own hosts among them (the "
                                        "workers of one server split them "
                                        "by node id, other processes by a "
                                        "hash salted per process) "
                                        "and passes over, for a few "
                                        "seconds, nodes it sees another "
                                        "writer change")],
               help="How one of the host_subset_size best hosts (and "
                    "those tied with the last) is chosen. Either "
                    "way a node this process is still claiming on is "
                    "passed over while others remain. per_process keeps "
                    "concurrent scheduler processes on different nodes: "
                    "measured at 1,000 hosts, 60% full, up to 6 "
                    "processes with host_subset_size 64, no claim lost "
                    "between the workers of one server and 0.2-0.3 per "
                    "100 placements between separate servers, where "
                    "random loses 4 even at 128; it lands a little "
                    "further from the best weight than random at the "
                    "same size (a process keeps its "
                    "favourite until it leaves the best). See "
                    "benchmarks/README.rst, 'Claim races'."),
    # nova's *_allocation_ratio options are in [DEFAULT]: an operator's
    # nova setting carries over (the [filter_scheduler] value wins).
    cfg.FloatOpt("cpu_allocation_ratio", default=16.0, min=0.0,
                 deprecated_group="DEFAULT",
                 help="vCPU overcommit ratio for nodes that do not report "
                      "their own (a node value of 0 or NULL means unset; "
                      "nova's [DEFAULT] cpu_allocation_ratio, read there "
                      "too)."),
    cfg.FloatOpt("ram_allocation_ratio", default=1.5, min=0.0,
                 deprecated_group="DEFAULT",
                 help="RAM overcommit ratio for nodes that do not report "
                      "their own (nova's [DEFAULT] ram_allocation_ratio, "
                      "read there too)."),
    cfg.FloatOpt("disk_allocation_ratio", default=1.0, min=0.0,
                 deprecated_group="DEFAULT",
                 help="Disk overcommit ratio for nodes that do not report "
                      "their own (nova's [DEFAULT] disk_allocation_ratio, "
                      "read there too)."),
    cfg.FloatOpt("ram_weight_multiplier", mutable=True, default=1.0,
                 help="Multiplier of the RAM weigher. Positive spreads "
                      "instances over hosts with most free RAM; negative "
                      "stacks them."),
    cfg.FloatOpt("cpu_weight_multiplier", mutable=True, default=1.0,
                 help="Multiplier of the CPU weigher (free vCPUs)."),
    cfg.FloatOpt("disk_weight_multiplier", mutable=True, default=1.0,
                 help="Multiplier of the disk weigher (free disk)."),
    cfg.FloatOpt("soft_affinity_weight_multiplier",
                 mutable=True, default=1.0, min=0.0,
                 help="Multiplier of the ServerGroupSoftAffinityWeigher: "
                      "for a server group with the soft-affinity policy, "
                      "hosts holding more of the group's members weigh "
                      "more. Only a positive value is meaningful (a "
                      "negative one would turn the policy around); 0 "
                      "turns the policy off."),
    cfg.FloatOpt("soft_anti_affinity_weight_multiplier",
                 mutable=True, default=1.0,
                 min=0.0,
                 help="Multiplier of the ServerGroupSoftAntiAffinityWeigher: "
                      "for a server group with the soft-anti-affinity "
                      "policy, hosts holding more of the group's members "
                      "weigh less. Only a positive value is meaningful; 0 "
                      "turns the policy off."),
    cfg.StrOpt("default_availability_zone", default="nova",
               # nova's option is in [DEFAULT]: its setting carries over.
               deprecated_group="DEFAULT",
               help="Availability zone of hosts that belong to no aggregate "
                    "with an availability_zone key (nova's [DEFAULT] "
                    "default_availability_zone, read there too)."),
    cfg.IntOpt("max_io_ops_per_host", mutable=True, default=8, min=0,
               help="The number of instances that can be actively performing "
                    "IO on a host. Instances performing IO include those in "
                    "the following states: build, resize, snapshot, "
                    "migrate, rescue, unshelve. This setting only affects "
                    "scheduling if the IoOpsFilter filter is enabled (the "
                    "AggregateIoOpsFilter uses it where the host's "
                    "aggregates set no max_io_ops_per_host metadata)."),
    cfg.IntOpt("max_instances_per_host", mutable=True, default=50, min=1,
               help="Maximum number of instances that can exist on a host. "
                    "The NumInstancesFilter and AggregateNumInstancesFilter "
                    "reject any host that has at least as many instances as "
                    "this value (the aggregate filter uses it where the "
                    "host's aggregates set no max_instances_per_host "
                    "metadata)."),
    cfg.ListOpt("isolated_images", mutable=True, default=[],
                help="List of UUIDs for images that can only be run on "
                     "certain hosts. If there is a need to restrict some "
                     "images to only run on certain designated hosts, list "
                     "those image UUIDs here. This setting only affects "
                     "scheduling if the IsolatedHostsFilter filter is "
                     "enabled."),
    cfg.ListOpt("isolated_hosts", mutable=True, default=[],
                help="List of hosts that can only run certain images. If "
                     "there is a need to restrict some images to only run "
                     "on certain designated hosts, list those host names "
                     "here. This setting only affects scheduling if the "
                     "IsolatedHostsFilter filter is enabled."),
    cfg.BoolOpt("restrict_isolated_hosts_to_isolated_images",
                mutable=True, default=True,
                help="Prevent non-isolated images from being built on "
                     "isolated hosts. This setting only affects scheduling "
                     "if the IsolatedHostsFilter filter is enabled. Even "
                     "then, this option doesn't affect the behavior of "
                     "requests for isolated images, which will always be "
                     "restricted to isolated hosts."),
    cfg.StrOpt("aggregate_image_properties_isolation_namespace", mutable=True,
               help="Image property namespace for use in the host "
                    "aggregate. Images and hosts can be configured so that "
                    "certain images can only be scheduled to hosts in a "
                    "particular aggregate. This is done with metadata "
                    "values set on the host aggregate that are identified "
                    "by beginning with the value of this option. If the "
                    "host is part of an aggregate with such a metadata key, "
                    "the image in the request spec must have the value of "
                    "that metadata in its properties in order for the "
                    "scheduler to consider the host as acceptable. Only "
                    "used by the AggregateImagePropertiesIsolation filter; "
                    "unset means every aggregate metadata key is "
                    "compared."),
    cfg.StrOpt("aggregate_image_properties_isolation_separator",
               mutable=True, default=".",
               help="Separator character(s) for image property namespace "
                    "and name. When using the "
                    "AggregateImagePropertiesIsolation filter, the relevant "
                    "metadata keys are prefixed with the namespace defined "
                    "in aggregate_image_properties_isolation_namespace plus "
                    "a separator. This option defines the separator to be "
                    "used."),
    cfg.StrOpt("image_properties_default_architecture", mutable=True,
               choices=ARCHITECTURES,
               help="The default architecture to be used when using the "
                    "ImagePropertiesFilter, for images that do not set "
                    "the hw_architecture (or architecture) property. It "
                    "avoids, for example, x86_64 images landing on aarch64 "
                    "compute nodes because the image did not say which "
                    "architecture it needs. Unset means such images are "
                    "not restricted by architecture."),
    cfg.FloatOpt("io_ops_weight_multiplier", mutable=True, default=-1.0,
                 help="IO operations weight multiplier ratio. This option "
                      "determines how hosts with differing workloads are "
                      "weighed. Negative values, such as the default, "
                      "will result in the scheduler preferring hosts with "
                      "lighter workloads whereas positive values will "
                      "prefer hosts with heavier workloads. The absolute "
                      "value controls how strong the IoOpsWeigher is "
                      "relative to other weighers."),
    cfg.FloatOpt("hypervisor_version_weight_multiplier",
                 mutable=True, default=1.0,
                 help="Hypervisor version weight multiplier ratio (the "
                      "HypervisorVersionWeigher). Positive values, such as "
                      "the default, prefer hosts with newer hypervisors "
                      "(which aids upgrades); negative values prefer older "
                      "ones; 0 disables the weigher."),
    cfg.FloatOpt("num_instances_weight_multiplier", mutable=True, default=0.0,
                 help="Number of instances weight multiplier ratio. The "
                      "multiplier is used for weighing hosts based on the "
                      "reported number of instances they have. Negative "
                      "numbers indicate preferring hosts with fewer "
                      "instances (i.e. choosing to spread instances), while "
                      "positive numbers mean preferring hosts with more "
                      "instances (i.e. choosing to pack). The default is "
                      "0.0, which means that you have to choose a strategy "
                      "if you want to use the NumInstancesWeigher."),
    cfg.FloatOpt("build_failure_weight_multiplier",
                 mutable=True, default=1000000.0,
                 help="Multiplier used for weighing hosts that have had "
                      "recent build failures (the failed_builds statistic "
                      "a compute node reports, reset on a successful "
                      "build). Build failures may indicate a failing, "
                      "misconfigured, or otherwise ailing compute node, and "
                      "avoiding it during scheduling may be beneficial. The "
                      "weight is inversely proportional to the number of "
                      "recent build failures (the BuildFailureWeigher "
                      "negates this multiplier). This value should be set "
                      "to some high value to offset weight given by other "
                      "enabled weighers due to available resources. To "
                      "disable weighing compute hosts by the number of "
                      "recent failures, set this to zero."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
