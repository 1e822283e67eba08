"""ServerGroupSoftAffinityWeigher, ServerGroupSoftAntiAffinityWeigher: the
soft server-group policies, which only ever prefer (never refuse) a host.

The raw value is the number of the group's members on the host (from the
group's ``hosts``, one entry per member: what the caller sent, the members
this service holds claims for, and the instances placed earlier in the same
request), for a group with the weigher's policy; 0 otherwise.

- ServerGroupSoftAffinityWeigher: policy ``soft-affinity``, raw = members
  on the host; ``[filter_scheduler] soft_affinity_weight_multiplier`` (1.0).
- ServerGroupSoftAntiAffinityWeigher: policy ``soft-anti-affinity``, raw =
  −(members on the host); ``soft_anti_affinity_weight_multiplier`` (1.0).

Both multipliers are at least 0 (nova: a negative one would turn the policy
around). No fixed bounds: values are normalized over the hosts weighed. A
request without such a group skips them (``applies``), so they cost nothing
and do not show in a ranking's weights.
"""
from __future__ import annotations

import collections

import numpy as np

from scheduler.weighers.base import BaseWeigher


class _SoftGroupWeigher(BaseWeigher):
    policy: str
    sign: float

    def _counts(self, spec) -> collections.Counter | None:
        group = spec.instance_group
        if group is None or group.policy != self.policy or not group.hosts:
            return None
        return collections.Counter(group.hosts)

    def applies(self, spec) -> bool:
        # Without members of a group with this policy every host weighs 0:
        # skipped, at no cost per host.
        return self._counts(spec) is not None

    def weigh(self, host, spec) -> float:
        counts = self._counts(spec)
        if counts is None:
            return 0.0
        return self.sign * counts[host.host]

    def weigh_columns(self, view, idx, spec):
        values = np.zeros(len(idx))
        counts = self._counts(spec)
        if counts is None:
            return values
        names = view.take("host_names", idx)
        hit = np.flatnonzero(np.isin(names, list(counts)))
        values[hit] = [self.sign * counts[n] for n in names[hit]]
        return values


class ServerGroupSoftAffinityWeigher(_SoftGroupWeigher):
    multiplier_option = "soft_affinity_weight_multiplier"
    policy = "soft-affinity"
    sign = 1.0


class ServerGroupSoftAntiAffinityWeigher(_SoftGroupWeigher):
    multiplier_option = "soft_anti_affinity_weight_multiplier"
    policy = "soft-anti-affinity"
    sign = -1.0
