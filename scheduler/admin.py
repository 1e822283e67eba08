"""Operator actions on services and nodes (behind ``scheduler-manage``)."""
from __future__ import annotations

import sqlalchemy as sa

from scheduler import exception
from scheduler.db import api as db
from scheduler.db import models


def list_services(engine: sa.Engine) -> list[dict]:
    """Every live service with its state; ``up`` by the database's clock
    against ``service_down_time`` is left to the caller (needs conf)."""
    s = models.services
    with engine.connect() as conn:
        now = db.db_time(conn)
        rows = conn.execute(
            sa.select(s.c.id, s.c.host, s.c.binary, s.c.disabled,
                      s.c.disabled_reason, s.c.forced_down, s.c.last_seen_up,
                      s.c.updated_at, s.c.created_at)
            .where(s.c.deleted == 0).order_by(s.c.host, s.c.binary)).all()
    out = []
    for row in rows:
        heartbeat = row.last_seen_up or row.updated_at or row.created_at
        out.append({"id": row.id, "host": row.host, "binary": row.binary,
                    "disabled": bool(row.disabled),
                    "disabled_reason": row.disabled_reason,
                    "forced_down": bool(row.forced_down),
                    "heartbeat_age": None if heartbeat is None
                    else (now - heartbeat).total_seconds()})
    return out


def set_service_disabled(engine: sa.Engine, host: str, disabled: bool,
                         reason: str | None = None) -> None:
    """Disable (with a reason) or enable the compute service of ``host``.
    :raises NotFound: no live compute service on that host.
    """
    s = models.services
    with engine.begin() as conn:
        result = conn.execute(
            s.update().where(s.c.host == host,
                             s.c.binary == db.COMPUTE_BINARY,
                             s.c.deleted == 0)
            .values(disabled=disabled,
                    disabled_reason=reason if disabled else None,
                    updated_at=db.utcnow()))
    if result.rowcount == 0:
        raise exception.NotFound(f"no compute service on host {host!r}")


def list_nodes(engine: sa.Engine) -> list[dict]:
    """Every live compute node with its totals, usage and ratios."""
    n = models.compute_nodes
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(n.c.id, n.c.host, n.c.hypervisor_hostname, n.c.vcpus,
                      n.c.vcpus_used, n.c.memory_mb, n.c.memory_mb_used,
                      n.c.local_gb, n.c.local_gb_used,
                      n.c.cpu_allocation_ratio, n.c.ram_allocation_ratio,
                      n.c.disk_allocation_ratio, n.c.generation)
            .where(n.c.deleted == 0).order_by(n.c.host,
                                              n.c.hypervisor_hostname))
        return [dict(row._mapping) for row in rows]


def audit_allocations(engine: sa.Engine, cpu_ratio: float, ram_ratio: float,
                      disk_ratio: float) -> list[dict]:
    """Nodes whose usage differs from the sum of their allocations, or whose
    allocations exceed capacity times ratio (a node's own ratio, else the
    given defaults). An empty list means the books balance.
    """
    n = models.compute_nodes
    a = models.allocations
    sums = (sa.select(a.c.compute_node_id,
                      sa.func.sum(a.c.vcpus).label("vcpus"),
                      sa.func.sum(a.c.memory_mb).label("memory_mb"),
                      sa.func.sum(a.c.disk_gb).label("disk_gb"))
            .group_by(a.c.compute_node_id).subquery())
    query = (sa.select(n, sums.c.vcpus.label("a_vcpus"),
                       sums.c.memory_mb.label("a_memory_mb"),
                       sums.c.disk_gb.label("a_disk_gb"))
             .select_from(n.outerjoin(sums, sums.c.compute_node_id == n.c.id))
             .where(n.c.deleted == 0).order_by(n.c.host))
    problems = []
    with engine.connect() as conn:
        for row in conn.execute(query):
            checks = (
                ("vcpus", row.vcpus_used, row.a_vcpus or 0,
                 row.vcpus * (row.cpu_allocation_ratio or cpu_ratio)),
                ("memory_mb", row.memory_mb_used, row.a_memory_mb or 0,
                 row.memory_mb * (row.ram_allocation_ratio or ram_ratio)),
                ("disk_gb", row.local_gb_used, row.a_disk_gb or 0,
                 row.local_gb * (row.disk_allocation_ratio or disk_ratio)),
            )
            for resource, used, allocated, capacity in checks:
                if used != allocated:
                    problems.append({
                        "host": row.host, "node": row.hypervisor_hostname,
                        "resource": resource, "problem": "usage mismatch",
                        "used": used, "allocated": allocated,
                        "capacity": capacity})
                if allocated > capacity:
                    problems.append({
                        "host": row.host, "node": row.hypervisor_hostname,
                        "resource": resource, "problem": "over capacity",
                        "used": used, "allocated": allocated,
                        "capacity": capacity})
    return problems


def fix_usage(engine: sa.Engine) -> int:
    """Set every node's usage to the sum of its allocations (bumping the
    generation, so plans made on the old numbers lose their claims).
    :returns: how many nodes changed.
    """
    n = models.compute_nodes
    a = models.allocations

    def total(column):
        return (sa.select(sa.func.coalesce(sa.func.sum(column), 0))
                .where(a.c.compute_node_id == n.c.id).scalar_subquery())

    vcpus, memory, disk = total(a.c.vcpus), total(a.c.memory_mb), \
        total(a.c.disk_gb)
    count = (sa.select(sa.func.count()).where(a.c.compute_node_id == n.c.id)
             .scalar_subquery())
    with engine.begin() as conn:
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
