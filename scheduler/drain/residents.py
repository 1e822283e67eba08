"""What is on a host, and the move each instance of it gets.

An instance is on a host when its claim's node is one of the host's
(a move arriving there included: draining re-targets it, its first source
kept). Its move is the request a move of that instance gets, built from
what its claim records: its size, project, user and server group (a hard
group's policy as its claims last stated it, ``claim_groups``). Claims do
not record the boot's flavor extra specs, image or requested zone, so
filters on those pass; the move stays in the zone of the host it leaves
(the zone an operator's maintenance keeps), and with ``same_aggregate`` in
an aggregate of that host.
"""
from __future__ import annotations

import dataclasses

import sqlalchemy as sa

from scheduler import exception
from scheduler.claims import groups
from scheduler.db import models
from scheduler.hosts.state import HostState
from scheduler.request.spec import Flavor
from scheduler.request.spec import InstanceGroup
from scheduler.request.spec import RequestSpec


@dataclasses.dataclass(frozen=True)
class Resident:
    """One instance on the drained host, as its claim records it."""
    consumer_uuid: str
    node_id: int
    nodename: str
    source_node_id: int | None      # set while it is still moving here
    project_id: str | None
    user_id: str | None
    vcpus: int
    memory_mb: int
    disk_gb: int
    group: groups.GroupRule | None

    def describe(self) -> str:
        """``uuid (2 vCPU, 4096 MB, 40 GB)``, for refusals."""
        return (f"{self.consumer_uuid} ({self.vcpus} vCPU, "
                f"{self.memory_mb} MB, {self.disk_gb} GB)")


def on_host(engine: sa.Engine, host: str) -> list[Resident]:
    """The instances holding a claim on ``host``'s live nodes, by uuid,
    with their hard groups' rules."""
    a, n = models.allocations, models.compute_nodes
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(a.c.consumer_uuid, a.c.compute_node_id,
                      n.c.hypervisor_hostname, a.c.source_node_id,
                      a.c.project_id, a.c.user_id, a.c.group_uuid,
                      a.c.vcpus, a.c.memory_mb, a.c.disk_gb)
            .join(n, n.c.id == a.c.compute_node_id)
            .where(n.c.host == host, n.c.deleted == 0)
            .order_by(a.c.consumer_uuid)).all()
        rules = groups.policies(conn, [r.group_uuid for r in rows
                                       if r.group_uuid])
    return [Resident(r.consumer_uuid, r.compute_node_id,
                     r.hypervisor_hostname, r.source_node_id, r.project_id,
                     r.user_id, r.vcpus, r.memory_mb, r.disk_gb,
                     rules.get(r.group_uuid)) for r in rows]


def zone_of(state: HostState, default_zone: str) -> str:
    """The availability zone ``state``'s host is in: its aggregates' (the
    first by name if several), else ``default_zone``."""
    return min(state.availability_zones(), default=default_zone)


def instance_group(rule: groups.GroupRule) -> InstanceGroup:
    """The server group a move of a member of ``rule``'s group names (its
    members' hosts still to be filled in)."""
    return InstanceGroup(policy=rule.policy, uuid=rule.uuid,
                         max_server_per_host=rule.max_per_host)


def move_spec(resident: Resident, host: HostState, zone: str,
              same_aggregate: bool,
              group: InstanceGroup | None = None) -> RequestSpec:
    """The move of ``resident`` off ``host`` (a state of the drained host):
    any host but that one, in ``zone``, in one of its aggregates with
    ``same_aggregate``; ``group``: its server group, members resolved
    (default: from its rule, none resolved).

    :raises InvalidRequest: ``same_aggregate`` for a host in no aggregate.
    """
    destination = None
    if same_aggregate:
        names = sorted(a.uuid or a.name for a in host.aggregates)
        if not names:
            raise exception.InvalidRequest(
                f"same_aggregate: host {host.host} is in no aggregate")
        # nova's member_of: a comma-separated entry is "in any of these".
        destination = {"aggregates": [",".join(names)]}
    if group is None and resident.group is not None:
        group = instance_group(resident.group)
    return RequestSpec(
        instance_uuids=(resident.consumer_uuid,),
        flavor=Flavor(memory_mb=resident.memory_mb, vcpus=resident.vcpus,
                      root_gb=resident.disk_gb),
        project_id=resident.project_id, user_id=resident.user_id,
        availability_zone=zone, ignore_hosts=(host.host,),
        requested_destination=destination, instance_group=group, move=True)
