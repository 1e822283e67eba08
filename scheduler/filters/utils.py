"""Helpers the filters share: aggregate metadata, HostState lookups by
nova's names, and :class:`RequestFilter`, the prepare-once filter shape.

Aggregate metadata (nova's ``scheduler/filters/utils.py`` semantics):

- :func:`aggregate_values` -- the raw values of one key over the host's
  aggregates (a set: two aggregates saying the same count once);
- :func:`aggregate_metadata` -- key -> set of comma-split, stripped values;
- :func:`min_value` -- the smallest value cast to a number, the default if
  there is none, and the default too if any value does not cast (logged once
  per distinct bad value, never per host and request);
- :func:`aggregate_number` -- both at once, for per-aggregate limits and
  ratios.

:func:`scheduler_hint` reads a hint the way nova does (a one-item list is
its item).
"""
from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import dataclasses
import json
import math
import threading
from typing import Any

from oslo_log import log as logging

from scheduler.filters.base import BaseFilter
from scheduler.hosts.state import HostState

LOG = logging.getLogger(__name__)

#: :meth:`RequestFilter.prepare` returns this when the request asks nothing
#: of the filter: every host passes without being looked at.
PASS_ALL: Any = object()

_warned: set[Any] = set()
_warned_lock = threading.Lock()


def warn_once(key: Any, msg: str, *args: Any) -> None:
    """Log a warning the first time ``key`` (hashable) is seen in this
    process; the message is formatted only then."""
    if key in _warned:
        return
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    LOG.warning(msg, *args)


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


def min_value(values: set[str], default: Any, cast: Callable[[str], Any],
              key: str = "") -> Any:
    """The minimum of ``values`` cast with ``cast``; ``default`` when there
    are none, or when one does not cast (nova falls back as a whole) or
    casts to an infinity or NaN: float() takes "inf" and "nan", but no
    ratio, limit or multiplier means either (an infinite ratio would let a
    host take anything; a NaN's minimum depends on the set's order)."""
    if not values:
        return default
    try:
        numbers = [cast(v) for v in values]
        # Only a float can be infinite or NaN: a whole number is finite
        # however long (and math.isfinite overflows on one beyond a
        # float's range).
        if not all(math.isfinite(n) for n in numbers
                   if isinstance(n, float)):
            raise ValueError("not a finite number")
        return min(numbers)
    except (TypeError, ValueError):
        warn_once((key, frozenset(values)), "Could not decode aggregate "
                  "metadata %s=%s; using the default %s", key,
                  sorted(values), default)
        return default


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
