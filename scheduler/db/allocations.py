"""Where claims are: read-only queries of the ``allocations`` table.

Which hosts a server group's members, or the instances a request names,
are on; where one consumer's claim is and whether it is moving; what a
request's consumers already hold; every side of every claim, for what a
node's usage must add up to. None of them writes, so any layer may ask —
the planning cycle (``hosts.manager``) as well as the claims and the admin
commands.

A move in flight holds two nodes, its destination and its source (a revert
puts the consumer back there): :func:`usage_sides` and the group counts
take both, :func:`consumer_hosts` the destination alone.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Iterable

import sqlalchemy as sa

from scheduler.db import models


def usage_sides() -> sa.Subquery:
    """Every side of every claim as rows of ``consumer_uuid``,
    ``compute_node_id``, ``project_id``, ``vcpus``, ``memory_mb``,
    ``disk_gb``, ``moving`` ("source" / "destination" for the two sides of
    a move in flight, else None) and ``on_top`` (1 unless a nova compute's
    report holds it: ``scheduler.novadb``): what each node's usage must
    add up to. The one place that knows a move holds two nodes."""
    a = models.allocations
    return sa.union_all(
        sa.select(a.c.consumer_uuid, a.c.compute_node_id, a.c.project_id,
                  a.c.vcpus, a.c.memory_mb, a.c.disk_gb,
                  sa.case((a.c.source_node_id.is_not(None),
                           sa.literal("destination")),
                          else_=sa.null()).label("moving"),
                  sa.case((a.c.reported_node_id == a.c.compute_node_id, 0),
                          else_=1).label("on_top")),
        sa.select(a.c.consumer_uuid,
                  a.c.source_node_id.label("compute_node_id"),
                  a.c.project_id, a.c.source_vcpus.label("vcpus"),
                  a.c.source_memory_mb.label("memory_mb"),
                  a.c.source_disk_gb.label("disk_gb"),
                  sa.literal("source").label("moving"),
                  sa.case((a.c.source_reported, 0),
                          else_=1).label("on_top"))
        .where(a.c.source_node_id.is_not(None)),
    ).subquery("usage_sides")


def _on_both_sides() -> sa.Join:
    """Allocations joined to the nodes they hold: a move in flight holds
    two, its destination and its source (a revert puts the consumer back
    there), so a group member counts on both. Select DISTINCT consumer and
    host to count a member once per host."""
    allocs = models.allocations
    nodes = models.compute_nodes
    return allocs.join(nodes, sa.or_(nodes.c.id == allocs.c.compute_node_id,
                                     nodes.c.id == allocs.c.source_node_id))


def group_hosts(conn: sa.Connection, group_uuid: str,
                exclude: Iterable[str] = ()) -> collections.Counter:
    """host -> number of the group's claimed members on it (consumers in
    ``exclude`` not counted)."""
    allocs = models.allocations
    nodes = models.compute_nodes
    query = (sa.select(allocs.c.consumer_uuid, nodes.c.host).distinct()
             .select_from(_on_both_sides())
             .where(allocs.c.group_uuid == group_uuid))
    exclude = list(exclude)
    if exclude:
        query = query.where(allocs.c.consumer_uuid.not_in(exclude))
    return collections.Counter(host for _, host in conn.execute(query))


def member_hosts(conn: sa.Connection, group_uuid: str | None,
                 members: Iterable[str], exclude: Iterable[str] = ()
                 ) -> collections.Counter:
    """host -> number of a server group's members placed on it: consumers
    claimed for the group (``group_uuid``) and the instances the caller
    names as ``members`` (nova's ``InstanceGroup.members``) that hold a
    claim, each consumer counted once; consumers in ``exclude`` left
    out. One query."""
    allocs = models.allocations
    nodes = models.compute_nodes
    members = list(dict.fromkeys(members))
    where = []
    if group_uuid:
        where.append(allocs.c.group_uuid == group_uuid)
    if members:
        where.append(allocs.c.consumer_uuid.in_(members))
    if not where:
        return collections.Counter()
    query = (sa.select(allocs.c.consumer_uuid, nodes.c.host).distinct()
             .select_from(_on_both_sides())
             .where(sa.or_(*where)))
    exclude = set(exclude)
    return collections.Counter(host for consumer, host in conn.execute(query)
                               if consumer not in exclude)


_CONSUMER_HOSTS = (
    sa.select(models.allocations.c.consumer_uuid, models.compute_nodes.c.host)
    .join(models.compute_nodes,
          models.compute_nodes.c.id == models.allocations.c.compute_node_id)
    .where(models.allocations.c.consumer_uuid.in_(
        sa.bindparam("uuids", expanding=True))))


def consumer_hosts(conn: sa.Connection, consumer_uuids: Iterable[str],
                   exclude: Iterable[str] = ()
                   ) -> dict[str, tuple[str, ...]]:
    """consumer uuid -> the hosts of its claims, for those of
    ``consumer_uuids`` that hold one (consumers in ``exclude`` left out):
    where the instances named by ``same_host`` / ``different_host`` hints
    are. One query."""
    uuids = list(dict.fromkeys(consumer_uuids))
    if not uuids:
        return {}
    exclude = set(exclude)
    out: dict[str, tuple[str, ...]] = {}
    for uuid, host in conn.execute(_CONSUMER_HOSTS, {"uuids": uuids}):
        if uuid not in exclude:
            out[uuid] = out.get(uuid, ()) + (host,)
    return out


@dataclasses.dataclass(frozen=True)
class Holding:
    """Where one consumer's claim is: its host, and while it is moving,
    the host it is moving from."""
    host: str
    source_host: str | None
    provisional: bool       # not confirmed yet (expires unless confirmed)
    #: The claim's node is deleted (its host's node was re-created under
    #: a new uuid): it counts on no node the scheduler plans on.
    node_deleted: bool = False
    #: Its move has no confirm step: being seen on its destination ends it.
    confirm_on_arrival: bool = False
    #: The host of the destination its expired move gave back
    #: (``expired_node_id``, see :func:`scheduler.claims.moves.relocate`).
    expired_host: str | None = None


def holdings(engine: sa.Engine, consumer_uuids: list[str]
             ) -> dict[str, Holding]:
    """consumer uuid -> :class:`Holding`, for those that hold a claim."""
    uuids = list(dict.fromkeys(consumer_uuids))
    if not uuids:
        return {}
    a, n = models.allocations, models.compute_nodes
    source, expired = n.alias("source"), n.alias("expired")
    query = (sa.select(a.c.consumer_uuid, n.c.host,
                       source.c.host.label("source_host"), a.c.expires_at,
                       n.c.deleted, a.c.confirm_on_arrival,
                       expired.c.host.label("expired_host"))
             .join(n, n.c.id == a.c.compute_node_id)
             .outerjoin(source, source.c.id == a.c.source_node_id)
             .outerjoin(expired, expired.c.id == a.c.expired_node_id)
             .where(a.c.consumer_uuid.in_(uuids)))
    with engine.connect() as conn:
        return {row.consumer_uuid: Holding(row.host, row.source_host,
                                           row.expires_at is not None,
                                           row.deleted != 0,
                                           bool(row.confirm_on_arrival),
                                           row.expired_host)
                for row in conn.execute(query)}


def _placements_statement() -> sa.Select:
    return _claims_with_nodes().where(models.allocations.c.consumer_uuid.in_(
        sa.bindparam("uuids", expanding=True)))


def _claims_with_nodes() -> sa.Select:
    """Every claim with its node: what :func:`placements` reads of one."""
    allocs = models.allocations
    nodes = models.compute_nodes
    return (sa.select(allocs.c.consumer_uuid, allocs.c.vcpus,
                      allocs.c.memory_mb, allocs.c.disk_gb,
                      allocs.c.compute_node_id, allocs.c.source_node_id,
                      allocs.c.source_vcpus, allocs.c.source_memory_mb,
                      allocs.c.source_disk_gb, allocs.c.reported_node_id,
                      allocs.c.source_reported,
                      nodes.c.host,
                      nodes.c.hypervisor_hostname,
                      nodes.c.uuid.label("node_uuid"),
                      (nodes.c.deleted != 0).label("node_deleted"))
            .join(nodes, nodes.c.id == allocs.c.compute_node_id))


_PLACEMENTS = _placements_statement()


def _stack_placements_statement() -> sa.Select:
    """:data:`_PLACEMENTS` of a stack's consumers, each as whoever holds
    its claim now: itself, or nova's instance that took it over
    (``stack_instances``), in one statement, so that a take-over is seen
    whole or not at all."""
    allocs = models.allocations
    taken = models.stack_instances
    return (_claims_with_nodes()
            .add_columns(sa.func.coalesce(taken.c.consumer_uuid,
                                          allocs.c.consumer_uuid)
                         .label("stack_consumer"))
            .outerjoin(taken, taken.c.instance_uuid == allocs.c.consumer_uuid)
            .where(sa.or_(allocs.c.consumer_uuid.in_(
                              sa.bindparam("uuids", expanding=True)),
                          taken.c.stack_id == sa.bindparam("stack_id"))))


_STACK_PLACEMENTS = _stack_placements_statement()


def stack_placements(engine: sa.Engine, stack_id: str,
                     consumer_uuids: list[str]) -> dict[str, sa.Row]:
    """The claims of stack ``stack_id``'s consumers: consumer uuid -> row
    as :func:`placements` reads it, whose ``consumer_uuid`` is who holds
    the claim now (nova's instance, for a consumer it took over)."""
    with engine.connect() as conn:
        return {row.stack_consumer: row for row in conn.execute(
            _STACK_PLACEMENTS, {"uuids": list(consumer_uuids),
                                "stack_id": stack_id})}


def placements(engine: sa.Engine, consumer_uuids: list[str]
               ) -> dict[str, sa.Row]:
    """Existing claims of these consumers: uuid -> row with host, nodename,
    node uuid, the claimed sizes and ``node_deleted`` (the claim's node is
    deleted: the claim counts on no node the scheduler plans on)."""
    with engine.connect() as conn:
        return {row.consumer_uuid: row for row in
                conn.execute(_PLACEMENTS, {"uuids": list(consumer_uuids)})}


def holds_all(held: dict[str, sa.Row], count: int) -> bool:
    """Whether all ``count`` consumers of a request hold a claim (``held``,
    as :func:`placements` reads them) on a live node: then what they
    hold answers a re-send. A claim on a deleted node places nothing; the
    request is placed again, replacing it."""
    return (len(held) == count
            and not any(row.node_deleted for row in held.values()))
