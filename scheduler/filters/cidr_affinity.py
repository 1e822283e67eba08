"""SimpleCIDRAffinityFilter: place the instance near an IP address.

Scheduler hints ``build_near_host_ip`` (an IPv4 or IPv6 address) and
``cidr`` (a prefix length, default ``/24``): the host's ``host_ip`` must be
in that network. Without ``build_near_host_ip`` every host passes; a host
without a (valid) ``host_ip`` fails. A malformed hint is an
``InvalidRequest`` naming it (nova raised an internal error).
"""
from __future__ import annotations

import functools
import ipaddress

from scheduler import exception
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import scheduler_hint

DEFAULT_CIDR = "/24"


@functools.lru_cache(maxsize=65536)
def _address(text: str):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def network(spec) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The requested network, None if no address is hinted.

    :raises InvalidRequest: naming the hint that is malformed.
    """
    near = scheduler_hint(spec, "build_near_host_ip")
    if not near:
        return None
    field = "spec.scheduler_hints"
    if not isinstance(near, str) or _address(near.strip()) is None:
        raise exception.InvalidRequest(
            f"{field}.build_near_host_ip: {str(near)[:60]!r} is not an IP "
            f"address")
    cidr = scheduler_hint(spec, "cidr")
    if cidr is None or cidr == "":
        cidr = DEFAULT_CIDR
    elif isinstance(cidr, int) and not isinstance(cidr, bool):
        cidr = f"/{cidr}"
    try:
        if not isinstance(cidr, str) or not cidr.startswith("/"):
            raise ValueError(cidr)
        return ipaddress.ip_network(near.strip() + cidr.strip(),
                                    strict=False)
    except ValueError:
        raise exception.InvalidRequest(
            f"{field}.cidr: {str(cidr)[:60]!r} is not a prefix length like "
            f"'/24' for {near.strip()}") from None


class SimpleCIDRAffinityFilter(RequestFilter):
    reason = "not in the requested network"
    run_filter_once_per_request = True

    def prepare(self, spec):
        net = network(spec)
        return PASS_ALL if net is None else net

    def passes(self, host, net) -> bool:
        if not host.host_ip:
            return False
        address = _address(host.host_ip)
        return address is not None and address in net

    def explain(self, spec) -> str:
        try:
            net = network(spec)
        except exception.InvalidRequest:
            net = None
        return f"{self.reason} ({net})" if net is not None else self.reason
