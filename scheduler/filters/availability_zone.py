"""AvailabilityZoneFilter: the host must be in the requested zone.

A host's zones are the ``availability_zone`` metadata of its aggregates; a
host in no such aggregate is in ``[filter_scheduler]
default_availability_zone`` (nova's semantics; nova's own ``[DEFAULT]
default_availability_zone`` is read too).
"""
import numpy as np

from scheduler.filters.base import BaseFilter


class AvailabilityZoneFilter(BaseFilter):
    reason = "not in the requested availability zone"
    run_filter_once_per_request = True

    def host_passes(self, host, spec) -> bool:
        zone = spec.availability_zone
        if not zone:
            return True
        zones = host.availability_zones()
        if zones:
            return zone in zones
        return zone == self.conf.filter_scheduler.default_availability_zone

    def filter_columns(self, view, idx, spec):
        zone = spec.availability_zone
        if not zone:
            return idx
        if zone in view.zones:
            mask = view.take_zone(zone, idx)
        else:
            mask = np.zeros(len(idx), bool)
        if zone == self.conf.filter_scheduler.default_availability_zone:
            mask = mask | view.take("no_zone", idx)
        return idx[mask]

    def explain(self, spec) -> str:
        # No zone asked (the rank table lists every filter): none shown.
        if not spec.availability_zone:
            return self.reason
        return f"{self.reason} ({spec.availability_zone})"
