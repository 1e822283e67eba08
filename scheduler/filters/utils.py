"""Helpers the filters share: aggregate metadata, HostState lookups by
nova's names, and :class:`RequestFilter`, the prepare-once filter shape.

Aggregate metadata (nova's ``scheduler/filters/utils.py`` semantics):

- :func:`aggregate_values` -- the raw values of one key over the host's
  aggregates (a set: two aggregates saying the same count once);
- :func:`aggregate_metadata` -- key -> set of comma-split, stripped values;
- :func:`aggregate_number` -- the smallest value of a key, cast to a
  number (``hosts.aggregates.min_value``, the one rule for that), for
  per-aggregate limits.

:func:`scheduler_hint` reads a hint the way nova does (a one-item list is
its item).
"""
from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import dataclasses
import json
from typing import Any

from scheduler.filters.base import BaseFilter
from scheduler.hosts.aggregates import min_value
from scheduler.hosts.state import HostState

#: :meth:`RequestFilter.prepare` returns this when the request asks nothing
#: of the filter: every host passes without being looked at.
PASS_ALL: Any = object()


# --- aggregate metadata ----------------------------------------------------

def aggregate_values(host: HostState, key: str) -> set[str]:
    """The values of ``key`` over the host's aggregates, as stored."""
    return {agg.metadata[key] for agg in host.aggregates
            if key in agg.metadata}


def aggregate_metadata(host: HostState, key: str | None = None
                       ) -> dict[str, set[str]]:
    """key -> the set of comma-separated, stripped values over the host's
    aggregates; with ``key``, only the aggregates that have that key."""
    out: dict[str, set[str]] = {}
    for agg in host.aggregates:
        if key is not None and key not in agg.metadata:
            continue
        for k, value in agg.metadata.items():
            out.setdefault(k, set()).update(
                v.strip() for v in str(value).split(","))
    return out


def aggregate_number(host: HostState, key: str, default: Any,
                     cast: Callable[[str], Any] = float) -> Any:
    """The smallest ``key`` over the host's aggregates, else ``default``."""
    if not host.aggregates:
        return default
    return min_value(aggregate_values(host, key), default, cast, key)


# --- scheduler hints --------------------------------------------------------

def scheduler_hint(spec, name: str) -> Any:
    """Hint ``name`` of ``spec`` as nova's ``get_scheduler_hint`` reads it:
    nova's RequestSpec keeps every hint as a list of strings, and a
    one-item list means its item. None if the hint is absent."""
    value = (spec.scheduler_hints or {}).get(name)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


# --- HostState by nova's names ----------------------------------------------

#: nova HostState names that ours spell differently or in other units, so
#: queries and extra specs written for nova carry over.
NOVA_ATTRIBUTES: dict[str, Callable[[HostState], Any]] = {
    "total_usable_ram_mb": lambda h: h.memory_mb_total,
    "total_usable_disk_gb": lambda h: h.disk_gb_total,
    "free_disk_mb": lambda h: h.free_disk_gb * 1024,
    "disk_mb_used": lambda h: h.disk_gb_used * 1024,
    "hypervisor_hostname": lambda h: h.nodename,
}


def is_host_attribute(name: str) -> bool:
    """Whether ``name`` is a HostState attribute (ours or nova's name for
    one), whatever its value on a given host."""
    if name in NOVA_ATTRIBUTES:
        return True
    if not name or name[0] == "_":
        return False
    value = getattr(HostState, name, None)
    return name in _FIELDS or isinstance(value, property)


_FIELDS = frozenset(f.name for f in dataclasses.fields(HostState))


def host_attribute(host: HostState, name: str) -> Any:
    """HostState attribute ``name`` (or nova's name for it), None if there
    is none. Private names and methods are not attributes."""
    alias = NOVA_ATTRIBUTES.get(name)
    if alias is not None:
        return alias(host)
    if not name or name[0] == "_":
        return None
    value = getattr(host, name, None)
    if callable(value):
        return None
    return value


def lookup_path(host: HostState, path: tuple[str, ...],
                stats_fallback: bool) -> Any:
    """Walk ``path``: the first name is a HostState attribute (falling back
    to a ``stats`` key if ``stats_fallback``), the rest are keys of nested
    mappings; a JSON string on the way is decoded. None if absent."""
    value = host_attribute(host, path[0])
    if value is None and stats_fallback:
        value = host.stats.get(path[0])
    for name in path[1:]:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                return None
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    return value


# --- the prepare-once filter shape -------------------------------------------

class RequestFilter(BaseFilter):
    """A filter whose per-request work is done once, not once per host.

    :meth:`prepare` reads the request and the options into a value that
    :meth:`passes` uses for each host; it may raise ``InvalidRequest``.
    ``filter_all`` prepares once per call, so nothing per request is kept
    on ``self`` (one instance serves concurrent requests), and
    ``host_passes`` stays correct on its own.
    """

    def prepare(self, spec) -> Any:
        raise NotImplementedError

    def passes(self, host: HostState, prepared: Any) -> bool:
        raise NotImplementedError

    def host_passes(self, host, spec) -> bool:
        prepared = self.prepare(spec)
        return prepared is PASS_ALL or self.passes(host, prepared)

    def filter_columns(self, view, idx, spec):
        # Most requests ask nothing of such a filter (no retry, no extra
        # specs, no image properties): then skip building HostStates.
        if self.prepare(spec) is PASS_ALL:
            return idx
        return None

    def filter_all(self, hosts, spec):
        prepared = self.prepare(spec)
        if prepared is PASS_ALL:
            return list(hosts)
        passes = self.passes
        return [h for h in hosts if passes(h, prepared)]
