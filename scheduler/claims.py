"""Atomic claims and releases against SQL.

A claim is one transaction: for every node it touches, bump the node's usage
with ``UPDATE ... WHERE id = :id AND generation = :seen`` (generation + 1),
then insert one allocation row per consumer. If any UPDATE matches no row,
another writer changed that node since we read it: the whole transaction
rolls back and :class:`ClaimConflict` names the node, so the caller re-reads
and plans again. A consumer already holding an allocation makes the insert
violate the unique ``consumer_uuid`` and the transaction rolls back too, so a
consumer never holds two claims.

The UPDATEs come first on purpose: on SQLite a transaction that starts with a
write waits for the write lock (busy timeout) instead of failing when a read
snapshot turns out to be stale.
"""
from __future__ import annotations

import collections
import dataclasses

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.db import models


@dataclasses.dataclass(frozen=True)
class Claim:
    consumer_uuid: str
    node_id: int
    generation: int      # the node's generation the plan was made against
    vcpus: int
    memory_mb: int
    disk_gb: int
    project_id: str | None = None
    user_id: str | None = None
    group_uuid: str | None = None


class ClaimConflict(Exception):
    """A node changed since it was read; plan again."""

    def __init__(self, node_id: int):
        super().__init__(f"compute node {node_id} changed concurrently")
        self.node_id = node_id


class ConsumerExists(Exception):
    """One of the consumers already holds a claim."""


def claim(engine: sa.Engine, claims: list[Claim]) -> None:
    """Record ``claims`` all together or not at all.

    :raises ClaimConflict: a node's generation moved; nothing was written.
    :raises ConsumerExists: a consumer already has an allocation; nothing
        was written.
    """
    by_node: dict[int, list[Claim]] = collections.defaultdict(list)
    for c in claims:
        by_node[c.node_id].append(c)
    nodes = models.compute_nodes
    try:
        with engine.begin() as conn:
            # Sorted so two transactions lock nodes in the same order
            # (no deadlock between them on PostgreSQL).
            for node_id in sorted(by_node):
                group = by_node[node_id]
                vcpus = sum(c.vcpus for c in group)
                memory = sum(c.memory_mb for c in group)
                disk = sum(c.disk_gb for c in group)
                result = conn.execute(
                    nodes.update()
                    .where(nodes.c.id == node_id,
                           nodes.c.generation == group[0].generation,
                           nodes.c.deleted == 0)
                    .values(vcpus_used=nodes.c.vcpus_used + vcpus,
                            memory_mb_used=nodes.c.memory_mb_used + memory,
                            local_gb_used=nodes.c.local_gb_used + disk,
                            free_ram_mb=nodes.c.free_ram_mb - memory,
                            free_disk_gb=nodes.c.free_disk_gb - disk,
                            running_vms=nodes.c.running_vms + len(group),
                            generation=nodes.c.generation + 1))
                if result.rowcount != 1:
                    raise ClaimConflict(node_id)
            conn.execute(models.allocations.insert(), [
                {"consumer_uuid": c.consumer_uuid, "compute_node_id": c.node_id,
                 "project_id": c.project_id, "user_id": c.user_id,
                 "group_uuid": c.group_uuid, "vcpus": c.vcpus,
                 "memory_mb": c.memory_mb, "disk_gb": c.disk_gb}
                for c in claims])
    except db_exc.DBDuplicateEntry as e:
        raise ConsumerExists(str(e)) from e


def release(engine: sa.Engine, consumer_uuids: list[str]) -> int:
    """Delete the consumers' allocations and give their usage back, once.

    Releasing an unknown or already released consumer is not an error.
    :returns: the number of allocations released.
    """
    if not consumer_uuids:
        return 0
    allocs = models.allocations
    nodes = models.compute_nodes
    with engine.begin() as conn:
        # DELETE ... RETURNING first: the row is gone for any concurrent
        # release, so usage is given back exactly once.
        rows = conn.execute(
            allocs.delete()
            .where(allocs.c.consumer_uuid.in_(consumer_uuids))
            .returning(allocs.c.compute_node_id, allocs.c.vcpus,
                       allocs.c.memory_mb, allocs.c.disk_gb)).all()
        totals: dict[int, list[int]] = collections.defaultdict(
            lambda: [0, 0, 0, 0])
        for row in rows:
            t = totals[row.compute_node_id]
            t[0] += row.vcpus
            t[1] += row.memory_mb
            t[2] += row.disk_gb
            t[3] += 1
        for node_id in sorted(totals):
            vcpus, memory, disk, count = totals[node_id]
            conn.execute(
                nodes.update().where(nodes.c.id == node_id)
                .values(vcpus_used=nodes.c.vcpus_used - vcpus,
                        memory_mb_used=nodes.c.memory_mb_used - memory,
                        local_gb_used=nodes.c.local_gb_used - disk,
                        free_ram_mb=nodes.c.free_ram_mb + memory,
                        free_disk_gb=nodes.c.free_disk_gb + disk,
                        running_vms=nodes.c.running_vms - count,
                        generation=nodes.c.generation + 1))
    return len(rows)


def placements(engine: sa.Engine, consumer_uuids: list[str]
               ) -> dict[str, sa.Row]:
    """Existing claims of these consumers: uuid -> row with host, nodename,
    node uuid and the claimed sizes."""
    allocs = models.allocations
    nodes = models.compute_nodes
    query = (sa.select(allocs.c.consumer_uuid, allocs.c.vcpus,
                       allocs.c.memory_mb, allocs.c.disk_gb,
                       nodes.c.host, nodes.c.hypervisor_hostname,
                       nodes.c.uuid.label("node_uuid"))
             .join(nodes, nodes.c.id == allocs.c.compute_node_id)
             .where(allocs.c.consumer_uuid.in_(consumer_uuids)))
    with engine.connect() as conn:
        return {row.consumer_uuid: row for row in conn.execute(query)}
