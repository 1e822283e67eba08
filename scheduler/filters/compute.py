"""ComputeFilter: the node's service must be up and enabled."""
from scheduler.filters.base import BaseFilter
from scheduler.filters.base import passing


class ComputeFilter(BaseFilter):
    reason = "service down or disabled"
    run_filter_once_per_request = True

    def host_passes(self, host, spec) -> bool:
        return host.usable

    def filter_columns(self, view, idx, spec):
        return passing(idx, view.take("usable", idx))
