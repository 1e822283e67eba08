"""What a decision gives back: the host chosen for each instance
(:class:`Selection`), the claim it makes, and the destination the RPC
answer carries for it — or, for a consumer that already holds a claim,
the destination that claim gives.

Its own module so that the drivers (``decide.base``), the claim attempts
(``decide.attempts``) and the stack planner read the same shape without
importing each other.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

from scheduler.hosts.planned import Claim
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec


@dataclasses.dataclass
class Selection:
    """The host chosen for one instance, and what the caller gets back."""
    consumer_uuid: str
    host: HostState                 # as read, before this request's usage
    limits: dict[str, float] = dataclasses.field(default_factory=dict)
    alternates: list[dict[str, Any]] | None = None

    def claim(self, spec: RequestSpec) -> Claim:
        """The claim of this choice for an instance of ``spec``: its
        flavor's size on the node at the generation the plan read."""
        group = spec.instance_group
        return Claim(
            consumer_uuid=self.consumer_uuid, node_id=self.host.node_id,
            host=self.host.host, generation=self.host.generation,
            vcpus=spec.flavor.vcpus, memory_mb=spec.flavor.memory_mb,
            disk_gb=spec.flavor.disk_gb, project_id=spec.project_id,
            user_id=spec.user_id, group_uuid=group.uuid if group else None,
            limits=self.limits)


def destination(spec: RequestSpec, s: Selection) -> dict[str, Any]:
    """One destination of the RPC answer (architecture.rst "RPC API",
    ``select_destinations``), for a selection just claimed."""
    out = {"host": s.host.host, "nodename": s.host.nodename,
           "uuid": s.consumer_uuid, "limits": s.limits,
           "allocation": {"compute_node_uuid": s.host.uuid,
                          "vcpus": spec.flavor.vcpus,
                          "memory_mb": spec.flavor.memory_mb,
                          "disk_gb": spec.flavor.disk_gb}}
    if s.alternates is not None:
        out["alternates"] = s.alternates
    return out


def held_destination(row: sa.Row) -> dict[str, Any]:
    """The destination a re-send gets back, for a claim row as
    :func:`claims.placements` reads it."""
    return {"host": row.host, "nodename": row.hypervisor_hostname,
            "uuid": row.consumer_uuid, "limits": {},
            "allocation": {"compute_node_uuid": row.node_uuid,
                           "vcpus": row.vcpus, "memory_mb": row.memory_mb,
                           "disk_gb": row.disk_gb}}
