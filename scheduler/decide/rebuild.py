"""Nova's rebuild check: what a rebuild asks the scheduler, as a request.

A rebuild keeps the instance where it is; nova only asks whether its host
still passes the filters for the (maybe new) image. The check is planned
like any request, on the instance's current host with nothing forced and
nothing claimed: :func:`check_spec` turns the rebuild into that request.
"""
from __future__ import annotations

import dataclasses

import sqlalchemy as sa

from scheduler import exception
from scheduler.request.spec import RequestSpec


def check_spec(spec: RequestSpec, held: dict[str, sa.Row]) -> RequestSpec:
    """What a rebuild check plans (the driver resolves it before planning,
    as any request): the instance's current host as the requested
    destination, nothing forced, so the filters run there as nova runs them
    for a rebuild. The host is the requested destination's; else the one
    host forced (nova 34's API forces the instance's host and node, and its
    conductor's destination names only the cell); else the host of the
    instance's claim in ``held``.

    The instance already holds its resources there and a rebuild keeps its
    flavor, so the host is asked for no more room than it has given: the
    size is zero for the resource filters.
    :raises InvalidRequest: no destination, forced host or claim names the
        current host.
    """
    current = dict(spec.requested_destination or {})
    if not current.get("host") and len(spec.force_hosts) == 1:
        current.update(host=spec.force_hosts[0], node=(
            spec.force_nodes[0] if len(spec.force_nodes) == 1 else None))
    if not current.get("host"):
        if len(held) != 1:
            raise exception.InvalidRequest(
                "spec.requested_destination: a rebuild check needs the "
                "instance's current host")
        row = next(iter(held.values()))
        current = {"host": row.host, "node": row.hypervisor_hostname}
    return dataclasses.replace(
        spec, flavor=dataclasses.replace(
            spec.flavor, memory_mb=0, vcpus=0, root_gb=0,
            ephemeral_gb=0, swap=0),
        requested_destination=current, force_hosts=(), force_nodes=(),
        ignore_hosts=(), return_alternates=False)
