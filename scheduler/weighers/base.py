"""The weigher plugin shape, and weighing: normalize, multiply, sum, sort.

A weigher returns a raw number per host (higher is better before its
multiplier). Raw values are normalized to [0, 1] over the hosts of *this*
call (never remembered across requests, unlike nova before Victoria), then
multiplied by the weigher's configured multiplier, so each weigher adds at
most |multiplier| to a host's weight.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Sequence

from oslo_config import cfg

from scheduler.host_state import HostState
from scheduler.request_spec import RequestSpec


class BaseWeigher:
    """One raw score per host; subclasses set ``multiplier_option``."""

    #: Option in [filter_scheduler] holding this weigher's multiplier.
    multiplier_option: ClassVar[str]
    #: Fixed lower/upper bound for normalization; None = min/max of the call.
    minval: ClassVar[float | None] = None
    maxval: ClassVar[float | None] = None

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def multiplier(self) -> float:
        return self.conf.filter_scheduler[self.multiplier_option]

    def weigh(self, host: HostState, spec: RequestSpec) -> float:
        raise NotImplementedError


@dataclasses.dataclass
class WeighedHost:
    host: HostState
    weight: float = 0.0
    #: weigher name -> normalized value (before the multiplier)
    weights: dict[str, float] = dataclasses.field(default_factory=dict)


def normalize(values: Sequence[float], minval: float | None = None,
              maxval: float | None = None) -> list[float]:
    """Map ``values`` to [0, 1]; all-equal values (or equal bounds) map to 0.
    Declared bounds clamp the values instead of being widened by them."""
    if not values:
        return []
    lower = min(values) if minval is None else minval
    upper = max(values) if maxval is None else maxval
    if upper <= lower:
        return [0.0] * len(values)
    span = upper - lower
    return [(min(max(v, lower), upper) - lower) / span for v in values]


def weigh_hosts(weighers: Sequence[BaseWeigher], hosts: Sequence[HostState],
                spec: RequestSpec) -> list[WeighedHost]:
    """Weigh ``hosts`` and return them best first; ties keep input order
    (Python's sort is stable)."""
    weighed = [WeighedHost(h) for h in hosts]
    if len(weighed) < 2:
        return weighed
    for weigher in weighers:
        multiplier = weigher.multiplier
        if multiplier == 0:
            continue
        raw = [weigher.weigh(h, spec) for h in hosts]
        for wh, value in zip(weighed, normalize(raw, weigher.minval,
                                                weigher.maxval)):
            wh.weights[weigher.name] = value
            wh.weight += multiplier * value
    weighed.sort(key=lambda wh: -wh.weight)
    return weighed
