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
