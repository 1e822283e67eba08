"""MetricsWeigher: weigh hosts by the metrics their compute nodes report.

``[metrics] weight_setting`` is a list of ``name=ratio``; a host's raw
weight is the sum of ``ratio x value`` over those metrics (values from the
node's ``metrics`` column, nova's monitor metrics), normalized over the
hosts of the call and multiplied by ``[metrics] weight_multiplier``.
Elements of weight_setting that are not ``name=number`` are ignored, with
a warning once per distinct setting.

A host that does not report one of the metrics (with a non-zero ratio) gets
``[metrics] weight_of_unavailable`` (-10000.0) as its raw weight, so it
ranks last. **Difference from nova:** nova raised
``ComputeHostMetricNotFound`` for such a host when ``[metrics] required``
is True (the default), which failed the whole request because of one host's
monitoring. Here the host gets weight_of_unavailable whatever ``required``
says; with ``required`` True the first such miss of each metric is logged
(once per process, as a warning), so the operator learns that the
MetricsFilter (which removes such hosts) is probably wanted.
"""
from __future__ import annotations

import functools
import threading

from oslo_log import log as logging

from scheduler.weighers.base import BaseWeigher

LOG = logging.getLogger(__name__)

_warned_missing: set[str] = set()
_warned_lock = threading.Lock()


@functools.lru_cache(maxsize=64)
def parse_weight_setting(raw: tuple[str, ...]
                         ) -> tuple[tuple[str, float], ...]:
    """``("cpu.percent=-1.0", ...)`` -> ``(("cpu.percent", -1.0), ...)``;
    invalid elements are dropped with a warning (once per distinct
    setting, as the result is cached)."""
    good = []
    bad = []
    for item in raw:
        name, sep, ratio = item.partition("=")
        name = name.strip()
        try:
            value = float(ratio)
        except ValueError:
            value = None
        if name and sep and value is not None:
            good.append((name, value))
        else:
            bad.append(item)
    if bad:
        LOG.warning("Ignoring the invalid elements of the option "
                    "[metrics] weight_setting: %s", ", ".join(bad))
    return tuple(good)


def weight_setting(conf) -> tuple[tuple[str, float], ...]:
    """The parsed ``[metrics] weight_setting`` of ``conf``."""
    return parse_weight_setting(tuple(conf.metrics.weight_setting))


def _warn_missing(name: str, host) -> None:
    if name in _warned_missing:
        return
    with _warned_lock:
        if name in _warned_missing:
            return
        _warned_missing.add(name)
    LOG.warning("Metric %(name)s is required by [metrics] weight_setting "
                "but host %(host)s (node %(node)s) does not report it; "
                "such hosts are weighed as [metrics] weight_of_unavailable. "
                "Enable the MetricsFilter to remove them instead. (Logged "
                "once per metric.)",
                {"name": name, "host": host.host, "node": host.nodename})


class MetricsWeigher(BaseWeigher):
    multiplier_option = "weight_multiplier"   # in [metrics]

    def __init__(self, conf):
        super().__init__(conf)
        self._local = threading.local()

    @property
    def configured_multiplier(self) -> float:
        return self.conf.metrics.weight_multiplier

    @property
    def aggregate_key(self) -> str:
        return "metrics_weight_multiplier"   # nova's name

    def _prepared(self, spec):
        """The options, read once per request (per thread: the weigher is
        shared by concurrent requests)."""
        local = self._local
        if getattr(local, "spec", None) is not spec:
            m = self.conf.metrics
            local.prepared = (weight_setting(self.conf), m.required,
                              m.weight_of_unavailable)
            local.spec = spec
        return local.prepared

    def weigh(self, host, spec) -> float:
        setting, required, unavailable = self._prepared(spec)
        metrics = host.metrics
        value = 0.0
        for name, ratio in setting:
            metric = metrics.get(name)
            if metric is None:
                if ratio * self.host_multiplier(host.aggregates) == 0:
                    # nova: a metric that does not count, by its ratio or
                    # by the host's multiplier
                    continue
                if required:
                    _warn_missing(name, host)
                return unavailable
            value += metric * ratio
        return value
