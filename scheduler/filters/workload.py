"""NumInstancesFilter, IoOpsFilter and their aggregate variants: the host
must be below a maximum number of instances / concurrent I/O operations.

``num_instances`` is the node's ``running_vms`` (the agent's count, which
this service's claims keep current; the ``num_instances`` stat if it is
NULL), ``num_io_ops`` its ``io_workload`` stat; both grow by one with every
instance planned onto the host, so these run for every instance of a
request.

- NumInstancesFilter: ``num_instances < [filter_scheduler]
  max_instances_per_host`` (50).
- IoOpsFilter: ``num_io_ops < [filter_scheduler] max_io_ops_per_host`` (8).
- AggregateNumInstancesFilter / AggregateIoOpsFilter: the same, with the
  smallest ``max_instances_per_host`` / ``max_io_ops_per_host`` metadata
  value over the host's aggregates; the option where there is none, or where
  a value is not an integer.
"""
from scheduler.filters.base import BaseFilter
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import aggregate_number

_INSTANCES = "max_instances_per_host"
_IO_OPS = "max_io_ops_per_host"


class NumInstancesFilter(RequestFilter):
    reason = "too many instances"

    def prepare(self, spec) -> int:
        return self.conf.filter_scheduler[_INSTANCES]

    def passes(self, host, maximum: int) -> bool:
        return host.num_instances < maximum

    def filter_columns(self, view, idx, spec):
        return idx[view.take("num_instances", idx) < self.prepare(spec)]

    def explain(self, spec) -> str:
        return f"{self.reason} (max {self.prepare(spec)})"


class AggregateNumInstancesFilter(NumInstancesFilter):
    # The limit varies per host (aggregate metadata): per-host checks only.
    filter_columns = BaseFilter.filter_columns

    def passes(self, host, default: int) -> bool:
        return host.num_instances < aggregate_number(host, _INSTANCES,
                                                     default, int)

    def explain(self, spec) -> str:
        return (f"{self.reason} (max {self.prepare(spec)}, or the "
                f"aggregates' {_INSTANCES})")


class IoOpsFilter(RequestFilter):
    reason = "too many concurrent I/O operations"

    def prepare(self, spec) -> int:
        return self.conf.filter_scheduler[_IO_OPS]

    def passes(self, host, maximum: int) -> bool:
        return host.num_io_ops < maximum

    def filter_columns(self, view, idx, spec):
        return idx[view.take("num_io_ops", idx) < self.prepare(spec)]

    def explain(self, spec) -> str:
        return f"{self.reason} (max {self.prepare(spec)})"


class AggregateIoOpsFilter(IoOpsFilter):
    # The limit varies per host (aggregate metadata): per-host checks only.
    filter_columns = BaseFilter.filter_columns

    def passes(self, host, default: int) -> bool:
        return host.num_io_ops < aggregate_number(host, _IO_OPS, default,
                                                  int)

    def explain(self, spec) -> str:
        return (f"{self.reason} (max {self.prepare(spec)}, or the "
                f"aggregates' {_IO_OPS})")
