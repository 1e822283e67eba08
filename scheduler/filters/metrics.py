"""MetricsFilter: the host must report every metric named in ``[metrics]
weight_setting`` (so the MetricsWeigher can weigh it). With no metrics
configured every host passes."""
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.weighers.metrics import weight_setting


class MetricsFilter(RequestFilter):
    reason = "does not report the metrics in [metrics] weight_setting"

    def prepare(self, spec):
        names = frozenset(name for name, _ in weight_setting(self.conf))
        return names or PASS_ALL

    def passes(self, host, names) -> bool:
        return names.issubset(host.metrics.keys())

    def explain(self, spec) -> str:
        names = sorted(name for name, _ in weight_setting(self.conf))
        return f"{self.reason}: {', '.join(names)}" if names else self.reason
