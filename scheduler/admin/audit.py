"""The books of claims against the nodes' usage: an audit of the nodes
whose usage differs from their allocations, or whose allocations exceed
the capacity the scheduler holds them to, or that are deleted and still
hold claims; and the fix that sets every node's usage to its
allocations.

With nova's databases as the host source a node's usage is its
compute's report plus the claims the report does not hold
(:mod:`scheduler.novadb`): the books are kept against the reports.
"""
from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import sqlalchemy as sa

from scheduler.admin import compute_hosts
from scheduler.hosts import capacity
from scheduler.db import allocations
from scheduler.db import compute
from scheduler.hosts.rows import aggregates_by_host
from scheduler.db import models
from scheduler.novadb import mirror
from scheduler.progress import Start


def audit_allocations(engine: sa.Engine, default_ratios: capacity.Ratios,
                      enabled_filters: Sequence[str] = (),
                      progress: Start | None = None,
                      reports: Mapping[str, sa.Row] | None = None
                      ) -> list[dict]:
    """Nodes whose usage differs from the sum of their allocations, or whose
    allocations exceed capacity times ratio: the ratio a scheduler with
    ``enabled_filters`` holds the node to
    (:func:`~scheduler.admin.compute_hosts.node_resources`); and
    deleted nodes that still hold claims (they count on no node the
    scheduler plans on; recomputing usage cannot fix them). An
    empty list means the books balance.

    :param progress: told the number of nodes; the report it returns is
        called with the number checked so far, after each node.
    :param reports: nova's compute node rows by uuid, with nova's
        databases as the host source: a node's allocations are then its
        report plus the claims the report does not hold; a node nova no
        longer has is not checked.
    """
    n = models.compute_nodes
    # Both sides of a move in flight hold usage on their nodes; with
    # reports, only what is on top of them.
    a = allocations.usage_sides()
    counted = a.c.on_top == 1 if reports is not None else sa.true()

    def total(column):
        return sa.func.sum(sa.case((counted, column), else_=0))

    sums = (sa.select(a.c.compute_node_id,
                      total(a.c.vcpus).label("vcpus"),
                      total(a.c.memory_mb).label("memory_mb"),
                      total(a.c.disk_gb).label("disk_gb"))
            .group_by(a.c.compute_node_id).subquery())
    query = (sa.select(n, sums.c.vcpus.label("a_vcpus"),
                       sums.c.memory_mb.label("a_memory_mb"),
                       sums.c.disk_gb.label("a_disk_gb"))
             .select_from(n.outerjoin(sums, sums.c.compute_node_id == n.c.id))
             .where(sa.or_(n.c.deleted == 0,
                           sums.c.compute_node_id.is_not(None)))
             .order_by(n.c.host))
    problems = []
    with engine.connect() as conn:
        aggregates = aggregates_by_host(compute.aggregates(conn))
        report = progress(conn.execute(
            sa.select(sa.func.count()).select_from(n).where(n.c.deleted == 0)
        ).scalar_one()) if progress else (lambda done: None)
        report(0)
        checked = 0
        for row in conn.execute(query):
            if row.deleted:
                problems += _claims_on_deleted_node(row)
                continue
            checked += 1
            nova_row = None if reports is None else reports.get(row.uuid)
            if reports is not None and nova_row is None:
                report(checked)
                continue
            # int(): SUM() of an integer column is DECIMAL on MariaDB.
            # node_resources lists capacity.RESOURCES in order; a node
            # not judged on one (0 vCPUs) is never over capacity on it.
            checks = [
                (r["resource"], r["used"],
                 int(getattr(row, "a_" + r["resource"]) or 0)
                 # Nova's compute_nodes has our usage columns' names.
                 + (getattr(nova_row, res.node_used) or 0
                    if nova_row is not None else 0), r["capacity"],
                 capacity.unjudged(res, r["total"]))
                for res, r in zip(capacity.RESOURCES,
                                  compute_hosts.node_resources(
                                      row, default_ratios,
                                      aggregates.get(row.host, ()),
                                      enabled_filters))]
            for resource, used, allocated, most, unjudged in checks:
                if used != allocated:
                    problems.append({
                        "host": row.host, "node": row.hypervisor_hostname,
                        "resource": resource, "problem": "usage mismatch",
                        "used": used, "allocated": allocated,
                        "capacity": most})
                if allocated > most and not unjudged:
                    problems.append({
                        "host": row.host, "node": row.hypervisor_hostname,
                        "resource": resource, "problem": "over capacity",
                        "used": used, "allocated": allocated,
                        "capacity": most})
            report(checked)
    return problems


#: The audit's problem for claims held on a deleted node.
ON_DELETED_NODE = "claims on a deleted node"


def _claims_on_deleted_node(row: sa.Row) -> list[dict]:
    """The audit's problems of a deleted node (``row``, with its
    allocations' sums) that still holds claims: one per resource (a
    deleted node has no capacity)."""
    return [{"host": row.host, "node": row.hypervisor_hostname,
             "resource": r.flavor, "problem": ON_DELETED_NODE,
             "used": getattr(row, r.node_used),
             "allocated": int(getattr(row, "a_" + r.flavor) or 0),
             "capacity": 0}
            for r in capacity.RESOURCES]


def fix_usage(engine: sa.Engine,
              reports: Mapping[str, sa.Row] | None = None) -> int:
    """Set every node's usage to the sum of its allocations (bumping the
    generation, so plans made on the old numbers lose their claims); with
    nova's ``reports`` (see :func:`audit_allocations`), to its report plus
    the claims the report does not hold.
    :returns: how many nodes changed (with reports: were written).
    """
    n = models.compute_nodes
    if reports is not None:
        with engine.connect() as conn:
            ours = mirror.our_nodes(conn)
        written = {ours[u]: row for u, row in reports.items() if u in ours}
        mirror.write_nodes(engine, written, set())
        return len(written)
    a = allocations.usage_sides()

    def total(column):
        return (sa.select(sa.func.coalesce(sa.func.sum(column), 0))
                .where(a.c.compute_node_id == n.c.id).scalar_subquery())

    vcpus, memory, disk = total(a.c.vcpus), total(a.c.memory_mb), \
        total(a.c.disk_gb)
    count = (sa.select(sa.func.count()).where(a.c.compute_node_id == n.c.id)
             .scalar_subquery())
    with engine.begin() as conn:
        # Lock the nodes first (SQLite: one writer anyway): the UPDATE, a
        # statement of its own (a snapshot of its own at READ COMMITTED),
        # then sums the allocations of every claim that held one of them,
        # committed by now.
        if conn.dialect.name != "sqlite":
            conn.execute(sa.select(n.c.id).where(n.c.deleted == 0)
                         .order_by(n.c.id).with_for_update()).all()
        return conn.execute(
            n.update()
            .where(n.c.deleted == 0,
                   sa.or_(n.c.vcpus_used != vcpus,
                          n.c.memory_mb_used != memory,
                          n.c.local_gb_used != disk))
            .values(vcpus_used=vcpus, memory_mb_used=memory,
                    local_gb_used=disk, running_vms=count,
                    free_ram_mb=n.c.memory_mb - memory,
                    free_disk_gb=n.c.local_gb - disk,
                    generation=n.c.generation + 1)).rowcount
