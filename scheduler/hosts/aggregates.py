"""Aggregate metadata as a number: the smallest value over a host's
aggregates wins (nova's ``scheduler/filters/utils.py`` semantics).

One rule for every per-aggregate number: allocation ratios
(``hosts.capacity``), per-aggregate limits (the filters) and weigher
multipliers (``weighers.base``). A value that does not cast makes the whole
set fall back to the default, logged once per distinct bad value, never per
host and request.

This module imports nothing of the scheduler: capacity, the filters and
the weighers all import it.
"""
from __future__ import annotations

from collections.abc import Callable
import math
import threading
from typing import Any

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

_warned: set[Any] = set()
_warned_lock = threading.Lock()


def _warn_once(key: Any, msg: str, *args: Any) -> None:
    """Log a warning the first time ``key`` (hashable) is seen in this
    process; the message is formatted only then."""
    if key in _warned:
        return
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    LOG.warning(msg, *args)


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
        _warn_once((key, frozenset(values)), "Could not decode aggregate "
                   "metadata %s=%s; using the default %s", key,
                   sorted(values), default)
        return default
