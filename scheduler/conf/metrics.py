"""Options in [metrics]: the MetricsWeigher and MetricsFilter.

Metrics are the values compute nodes report in ``compute_nodes.metrics``
(nova's monitor metrics, e.g. ``cpu.percent``).
"""
from oslo_config import cfg

GROUP = "metrics"

opts = [
    cfg.FloatOpt("weight_multiplier", default=1.0,
                 help="Multiplier used for weighing hosts based on reported "
                      "metrics. Greater than 1.0 increases the effect of "
                      "the metrics on the overall weight, 1.0 leaves it "
                      "unchanged, between 0.0 and 1.0 reduces it, 0.0 "
                      "disables the MetricsWeigher, and negative values "
                      "reverse it (hosts with low metric values win)."),
    cfg.ListOpt("weight_setting", default=[],
                help="Mapping of metric to weight modifier: a "
                     "comma-separated list of 'name=ratio' pairs, where "
                     "'name' is the name of a metric to be weighed and "
                     "'ratio' the relative weight of that metric. For "
                     "example, with 'name1=1.0, name2=-1.3' the weight of "
                     "a host is (name1.value * 1.0) + (name2.value * "
                     "-1.3). Elements that are not 'name=number' are "
                     "ignored with a warning. The MetricsFilter rejects "
                     "hosts that do not report every metric named here."),
    cfg.BoolOpt("required", default=True,
                help="Whether metrics are required. In nova a host missing "
                     "a required metric made the weigher raise and the "
                     "request fail; here such a host gets "
                     "weight_of_unavailable (the weigher logs the missing "
                     "metric once), so it is ranked last instead. Enable "
                     "the MetricsFilter to remove such hosts altogether. "
                     "If False, a missing metric is likewise treated as "
                     "weight_of_unavailable, without the log."),
    cfg.FloatOpt("weight_of_unavailable", default=-10000.0,
                 help="Weight of a host that does not report one of the "
                      "metrics in weight_setting (a metric whose ratio is "
                      "0 is not needed, so its absence does not count)."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
