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
import numpy as np

from scheduler.filters.base import BaseFilter
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import aggregate_number

_INSTANCES = "max_instances_per_host"
_IO_OPS = "max_io_ops_per_host"


def _room(view, idx, column: str, maximum) -> np.ndarray:
    """How many more instances each host at ``idx`` takes below
    ``maximum`` (a number, or an array of one per host) of ``column``:
    each planned instance adds one."""
    return np.maximum(maximum - view.take(column, idx), 0)


def _aggregate_maxima(view, idx, key: str, default: int) -> np.ndarray:
    """Each host's smallest ``key`` over its aggregates, else ``default``."""
    return np.array([aggregate_number(state, key, default, int)
                     for state in map(view.state, idx.tolist())], np.int64)


class NumInstancesFilter(RequestFilter):
    reason = "too many instances"

    def prepare(self, spec) -> int:
        return self.conf.filter_scheduler[_INSTANCES]

    def passes(self, host, maximum: int) -> bool:
        return host.num_instances < maximum

    def filter_columns(self, view, idx, spec):
        return idx[view.take("num_instances", idx) < self.prepare(spec)]

    def room(self, view, idx, spec):
        return _room(view, idx, "num_instances", self.prepare(spec))

    def explain(self, spec) -> str:
        return f"{self.reason} (max {self.prepare(spec)})"


class AggregateNumInstancesFilter(NumInstancesFilter):
    # The limit varies per host (aggregate metadata): per-host checks only.
    filter_columns = BaseFilter.filter_columns

    def passes(self, host, default: int) -> bool:
        return host.num_instances < aggregate_number(host, _INSTANCES,
                                                     default, int)

    def room(self, view, idx, spec):
        return _room(view, idx, "num_instances", _aggregate_maxima(
            view, idx, _INSTANCES, self.prepare(spec)))

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

    def room(self, view, idx, spec):
        return _room(view, idx, "num_io_ops", self.prepare(spec))

    def explain(self, spec) -> str:
        return f"{self.reason} (max {self.prepare(spec)})"


class AggregateIoOpsFilter(IoOpsFilter):
    # The limit varies per host (aggregate metadata): per-host checks only.
    filter_columns = BaseFilter.filter_columns

    def passes(self, host, default: int) -> bool:
        return host.num_io_ops < aggregate_number(host, _IO_OPS, default,
                                                  int)

    def room(self, view, idx, spec):
        return _room(view, idx, "num_io_ops", _aggregate_maxima(
            view, idx, _IO_OPS, self.prepare(spec)))

    def explain(self, spec) -> str:
        return (f"{self.reason} (max {self.prepare(spec)}, or the "
                f"aggregates' {_IO_OPS})")
