"""Filters that match the flavor's extra specs against the host.

Both use nova's matcher (:mod:`scheduler.filters.extra_specs_ops`).

ComputeCapabilitiesFilter (nova 34's semantics)
    Keys ``capabilities:<path>`` and unscoped keys; other scopes are not its
    business. The path (``:``-separated) starts at a HostState attribute
    (nova's names such as ``total_usable_ram_mb`` or ``free_disk_mb``
    work too), or a ``stats`` key when there is no such attribute, and goes
    down nested objects (JSON strings are decoded on the way), e.g.
    ``capabilities:cpu_info:arch``. A missing value fails; otherwise
    ``str(value)`` must match the spec. An **unscoped** key is checked only
    if the host has it (a HostState attribute, or a key of the node's
    ``stats``) and is ignored otherwise: nova stopped treating it as a
    requirement (Liberty did), because the same unscoped key is meant for
    AggregateInstanceExtraSpecsFilter. ``hw:maxphysaddr_bits: N`` is
    checked as ``capabilities:cpu_info:maxphysaddr:bits: >= N``, as in
    nova.

AggregateInstanceExtraSpecsFilter
    Keys ``aggregate_instance_extra_specs:<key>`` and unscoped keys; the
    host's aggregates must have metadata ``<key>`` and one of its values
    (comma-separated, over all the host's aggregates) must match. Unscoped
    keys are still required here, as in nova.
"""
from __future__ import annotations

from scheduler.filters import extra_specs_ops
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import aggregate_metadata
from scheduler.filters.utils import is_host_attribute
from scheduler.filters.utils import lookup_path

CAPABILITIES_SCOPE = "capabilities"
AGGREGATE_SCOPE = "aggregate_instance_extra_specs"
#: nova turns this flavor extra spec into a capabilities check.
MAXPHYSADDR_BITS = "hw:maxphysaddr_bits"
MAXPHYSADDR_PATH = ("cpu_info", "maxphysaddr", "bits")
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
        """(key, path, requirement, unscoped) for each key this filter
        checks."""
        for key, req in spec.flavor.extra_specs.items():
            if key == MAXPHYSADDR_BITS:
                if req is not None and str(req) != "":
                    yield key, MAXPHYSADDR_PATH, f">= {req}", False
                continue
            path = key.split(":")
            if len(path) > 1:
                if path[0] != CAPABILITIES_SCOPE:
                    continue
                del path[0]
                yield key, tuple(path), req, False
            else:
                yield key, tuple(path), req, True

    def prepare(self, spec):
        checks = []
        for _, path, req, unscoped in self._specs(spec):
            # An unscoped key that is no HostState attribute is checked only
            # on hosts whose stats have it (nova: ignored where absent).
            stats_only = unscoped and not is_host_attribute(path[0])
            checks.append((path, extra_specs_ops.matcher(_req(req)),
                           stats_only))
        return tuple(checks) or PASS_ALL

    def passes(self, host, checks) -> bool:
        for path, matches, stats_only in checks:
            if stats_only and path[0] not in host.stats:
                continue
            value = lookup_path(host, path, stats_fallback=True)
            if value is None or not matches(str(value)):
                return False
        return True

    def explain(self, spec) -> str:
        return _explain(self.reason, [f"{key}={_req(req)}"
                                      for key, _, req, _ in self._specs(spec)])


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
