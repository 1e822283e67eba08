"""A third-party plugin module, as an operator's own package would ship it:
one filter and one weigher, found only through their entry points.

The unit tests import it as ``tests.example_plugins``; the functional tests
copy it, with a ``*.dist-info/entry_points.txt`` registering both classes,
into a directory on the server's ``PYTHONPATH`` (nothing is installed).
It uses only the plugin API: ``BaseFilter`` / ``BaseWeigher``.
"""
from __future__ import annotations

import re

from oslo_config import cfg

from scheduler.filters.base import BaseFilter
from scheduler.weighers.base import BaseWeigher

_NUMBER = re.compile(r"(\d+)$")


def host_number(name: str) -> int:
    """The number a host name ends in (``compute-00042`` -> 42), else 0."""
    match = _NUMBER.search(name)
    return int(match.group(1)) if match else 0


class EvenHostsFilter(BaseFilter):
    """Only hosts whose name ends in an even number."""
    reason = "odd-numbered host"

    def host_passes(self, host, spec) -> bool:
        return host_number(host.host) % 2 == 0


class HostNameWeigher(BaseWeigher):
    """Prefers higher-numbered hosts; its multiplier is an option of its
    own, registered by the plugin when it is loaded."""
    multiplier_option = "host_name_weight_multiplier"

    def __init__(self, conf: cfg.ConfigOpts):
        super().__init__(conf)
        # Registering the same option again is a no-op.
        conf.register_opt(cfg.FloatOpt(
            self.multiplier_option, default=1.0,
            help="Multiplier of the example HostNameWeigher."),
            group="filter_scheduler")

    def weigh(self, host, spec) -> float:
        return host_number(host.host)
