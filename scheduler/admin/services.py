"""Operator actions on services: list them with their heartbeats, disable
or enable a host's compute service, and the up/down state an operator is
shown (by :mod:`scheduler.hosts.liveness`, as the scheduler judges it).
"""
from __future__ import annotations

import sqlalchemy as sa

from scheduler.admin import validation
from scheduler import exception
from scheduler.hosts import liveness
from scheduler.db import clock
from scheduler.db import compute
from scheduler.db import models


def list_services(engine: sa.Engine) -> list[dict]:
    """Every live service with its state; ``up`` by the database's clock
    against ``service_down_time`` is left to the caller (needs conf)."""
    s = models.services
    with engine.connect() as conn:
        now = clock.db_time(conn)
        rows = conn.execute(
            sa.select(s.c.id, s.c.host, s.c.binary, s.c.disabled,
                      s.c.disabled_reason, s.c.forced_down, s.c.last_seen_up,
                      s.c.updated_at, s.c.created_at)
            .where(s.c.deleted == 0).order_by(s.c.host, s.c.binary)).all()
    return [{"id": row.id, "host": row.host, "binary": row.binary,
             "disabled": bool(row.disabled),
             "disabled_reason": row.disabled_reason,
             "forced_down": bool(row.forced_down),
             "heartbeat_age": liveness.heartbeat_age(row, now)}
            for row in rows]


def set_service_disabled(engine: sa.Engine, host: str, disabled: bool,
                         reason: str | None = None) -> None:
    """Disable (with a reason) or enable the compute service of ``host``.
    :raises NotFound: no live compute service on that host.
    :raises InvalidRequest: the host is not text
        (:func:`~scheduler.admin.validation.check_name`), or the reason is
        too long or not printable text.
    """
    validation.check_name("host", host)
    if disabled and reason:
        validation.check_text("disabled reason", reason)
    with engine.begin() as conn:
        changed = compute.set_service_disabled(conn, host, disabled, reason)
    if changed == 0:
        raise exception.NotFound(f"no compute service on host {host!r}")


def service_state(forced_down: bool, heartbeat_age: float | None,
                  service_down_time: float) -> str:
    """``"up"`` or ``"down"``, by :func:`scheduler.hosts.liveness.is_up`."""
    return "up" if liveness.is_up(forced_down, heartbeat_age,
                                  service_down_time) else "down"


def compute_service(conn: sa.Connection, host: str) -> sa.Row:
    """The live compute service row of ``host``.
    :raises NotFound: ``no compute host 'X'``.
    """
    s = models.services
    row = conn.execute(
        sa.select(s).where(s.c.host == host,
                           s.c.binary == compute.COMPUTE_BINARY,
                           s.c.deleted == 0)).first()
    if row is None:
        raise exception.NotFound(f"no compute host {host!r}")
    return row
