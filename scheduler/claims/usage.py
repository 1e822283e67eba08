"""A node's usage: what claims hold on it, and the one UPDATE that changes it.

A claim holds its size on its node, and a move in flight holds its source
too. Claims, releases, moves and expiry all change a node's usage through
:func:`usage_update` (the claim's adds its guards), so its free columns,
instance count, generation and ``updated_at`` move together everywhere.
"""
from __future__ import annotations

import collections
from typing import Iterable

import sqlalchemy as sa

from scheduler.db import clock
from scheduler.db import models


#: (node id, vcpus, memory_mb, disk_gb) of one side of a claim.
Usage = tuple[int, int, int, int]


def usage_update(*where) -> sa.Update:
    """The one UPDATE of a node's usage, for claims and releases alike:
    node ``b_node_id`` (if ``where`` holds too) gets ``b_vcpus``,
    ``b_memory``, ``b_disk`` and ``b_count`` instances added (negative:
    given back), its free columns kept in step, its generation bumped and
    its ``updated_at`` set.

    Built once per use, with bind parameters: constructing the expression
    per call cost more than running it.
    """
    n = models.compute_nodes
    return (
        n.update().where(n.c.id == sa.bindparam("b_node_id"), *where)
        .values(vcpus_used=n.c.vcpus_used + sa.bindparam("b_vcpus"),
                memory_mb_used=n.c.memory_mb_used + sa.bindparam("b_memory"),
                local_gb_used=n.c.local_gb_used + sa.bindparam("b_disk"),
                free_ram_mb=n.c.free_ram_mb - sa.bindparam("b_memory"),
                free_disk_gb=n.c.free_disk_gb - sa.bindparam("b_disk"),
                running_vms=n.c.running_vms + sa.bindparam("b_count"),
                generation=n.c.generation + 1,
                # The database's clock, as every other writer here sets
                # it; and the statement then needs no Python-side
                # default, so it can run compiled (db.compiled).
                updated_at=clock.utcnow()))


def freed_by(rows: Iterable[sa.Row]) -> list[Usage]:
    """What releasing the claims ``rows`` (allocation rows, or
    :func:`scheduler.db.allocations.placements` rows) gives back: both
    sides of a move in flight."""
    rows = list(rows)
    return held(rows) + sources(rows)


def held(rows: Iterable[sa.Row]) -> list[Usage]:
    """What deleted allocation rows held on their node (the destination
    of a move in flight): none of what their node's report includes (nova's
    databases as the host source, ``scheduler.novadb``)."""
    return [(r.compute_node_id, r.vcpus, r.memory_mb, r.disk_gb)
            for r in rows if r.reported_node_id != r.compute_node_id]


def sources(rows: Iterable[sa.Row]) -> list[Usage]:
    """What deleted allocation rows held on the source of their move, but
    for the sources their report holds."""
    return [(r.source_node_id, r.source_vcpus, r.source_memory_mb,
             r.source_disk_gb) for r in rows
            if r.source_node_id is not None and not r.source_reported]


def give_back(conn: sa.Connection, usages: list[Usage]) -> None:
    """Take ``usages`` (claims deleted) away from their nodes."""
    change_usage(conn, usages, -1)


def change_usage(conn: sa.Connection, usages: list[Usage],
                 sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) ``usages`` on their nodes."""
    totals: dict[int, list[int]] = collections.defaultdict(
        lambda: [0, 0, 0, 0])
    for node_id, vcpus, memory_mb, disk_gb in usages:
        t = totals[node_id]
        t[0] += sign * vcpus
        t[1] += sign * memory_mb
        t[2] += sign * disk_gb
        t[3] += sign
    if not totals:
        return
    # In node id order: two transactions lock nodes in the same order.
    conn.execute(_CHANGE_USAGE, [
        {"b_node_id": node_id, "b_vcpus": vcpus, "b_memory": memory,
         "b_disk": disk, "b_count": count}
        for node_id, (vcpus, memory, disk, count) in sorted(totals.items())])


# A release's or a move's: no generation or capacity check, the usage
# given back or moved is already counted.
_CHANGE_USAGE = usage_update()
