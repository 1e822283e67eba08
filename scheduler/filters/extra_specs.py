"""Filters that match the flavor's extra specs against the host.

Both use nova's matcher (:mod:`scheduler.filters.extra_specs_ops`) and both,
as in nova's Liberty, treat an **unscoped** key (no ``scope:``) as a
requirement: enabling both with unscoped keys makes hosts fail one of them,
so scope the keys.

ComputeCapabilitiesFilter
    Keys ``capabilities:<path>`` and unscoped keys; other scopes are not its
    business. The path (``:``-separated) starts at a HostState attribute
    (nova's names such as ``total_usable_ram_mb`` or ``free_disk_mb``
    work too), or a ``stats`` key when there is no such attribute, and goes
    down nested objects (JSON strings are decoded on the way), e.g.
    ``capabilities:cpu_info:arch``. A missing value fails; otherwise
    ``str(value)`` must match the spec.

AggregateInstanceExtraSpecsFilter
    Keys ``aggregate_instance_extra_specs:<key>`` and unscoped keys; the
    host's aggregates must have metadata ``<key>`` and one of its values
    (comma-separated, over all the host's aggregates) must match.
"""
from __future__ import annotations

from scheduler.filters import extra_specs_ops
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import aggregate_metadata
from scheduler.filters.utils import lookup_path

CAPABILITIES_SCOPE = "capabilities"
AGGREGATE_SCOPE = "aggregate_instance_extra_specs"
_EXPLAIN_SPECS = 3


def _req(value) -> str:
    return "" if value is None else str(value)


def _explain(reason: str, specs: list[str]) -> str:
    if not specs:
        return reason
    shown = ", ".join(s[:60] for s in specs[:_EXPLAIN_SPECS])
    more = len(specs) - _EXPLAIN_SPECS
    return f"{reason}: {shown}" + (f" and {more} more" if more > 0 else "")


class ComputeCapabilitiesFilter(RequestFilter):
    reason = "capabilities do not match the flavor's extra specs"
    run_filter_once_per_request = True

    @staticmethod
    def _specs(spec):
        for key, req in spec.flavor.extra_specs.items():
            path = key.split(":")
            if len(path) > 1:
                if path[0] != CAPABILITIES_SCOPE:
                    continue
                del path[0]
            yield key, tuple(path), req

    def prepare(self, spec):
        checks = tuple((path, extra_specs_ops.matcher(_req(req)))
                       for _, path, req in self._specs(spec))
        return checks or PASS_ALL

    def passes(self, host, checks) -> bool:
        for path, matches in checks:
            value = lookup_path(host, path, stats_fallback=True)
            if value is None or not matches(str(value)):
                return False
        return True

    def explain(self, spec) -> str:
        return _explain(self.reason, [f"{key}={_req(req)}"
                                      for key, _, req in self._specs(spec)])


class AggregateInstanceExtraSpecsFilter(RequestFilter):
    reason = "aggregate metadata does not match the flavor's extra specs"
    run_filter_once_per_request = True

    @staticmethod
    def _specs(spec):
        for key, req in spec.flavor.extra_specs.items():
            scope = key.split(":", 1)
            if len(scope) > 1:
                if scope[0] != AGGREGATE_SCOPE:
                    continue
                del scope[0]
            yield key, scope[0], req

    def prepare(self, spec):
        checks = tuple((name, extra_specs_ops.matcher(_req(req)))
                       for _, name, req in self._specs(spec))
        return checks or PASS_ALL

    def passes(self, host, checks) -> bool:
        metadata = aggregate_metadata(host)
        for name, matches in checks:
            values = metadata.get(name)
            if not values or not any(matches(v) for v in values):
                return False
        return True

    def explain(self, spec) -> str:
        return _explain(self.reason, [f"{key}={_req(req)}"
                                      for key, _, req in self._specs(spec)])
