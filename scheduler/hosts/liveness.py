"""Is a service up (a compute, or a scheduler server among its peers):
the one owner of the rule.

A service is up when it is not forced down and its last heartbeat
(``last_seen_up``, else ``updated_at``, else ``created_at``) is at most
``service_down_time`` seconds old by the database's clock — never a
worker's, so clock skew between machines cannot make a healthy service look
dead. The host manager (which hosts are down), the admin commands (each
service's state) and :mod:`scheduler.service.peers` (which scheduler servers share
the topic) all ask here.
"""
from __future__ import annotations

import datetime
from typing import Protocol

import sqlalchemy as sa

from scheduler.db import clock

from scheduler.db import compute
from scheduler.db import models


def heartbeat(row) -> datetime.datetime | None:
    """A service row's last sign of life, or None if it never reported."""
    return row.last_seen_up or row.updated_at or row.created_at


def heartbeat_age(row, now: datetime.datetime) -> float | None:
    """Seconds since :func:`heartbeat` at the database's ``now``."""
    seen = heartbeat(row)
    return None if seen is None else (now - seen).total_seconds()


def is_up(forced_down: bool, age: float | None, down_time: float) -> bool:
    """The rule: not forced down, and a heartbeat at most ``down_time``
    seconds old (``age`` None: never seen, so down)."""
    return not forced_down and age is not None and age <= down_time


def down_hosts(conn: sa.Connection, down_time: float) -> set[str]:
    """Hosts whose compute service is down now (:func:`is_up` false)."""
    services = models.services
    now = clock.db_time(conn)
    cutoff = now - datetime.timedelta(seconds=down_time)
    # Each OR term has an index (migration 0004), so this reads only the
    # few candidate rows; the rule itself is applied to those here.
    query = sa.select(services.c.host, services.c.forced_down,
                      services.c.last_seen_up, services.c.updated_at,
                      services.c.created_at).where(
        services.c.binary == compute.COMPUTE_BINARY, services.c.deleted == 0,
        sa.or_(services.c.forced_down == sa.true(),
               services.c.last_seen_up.is_(None),
               services.c.last_seen_up < cutoff))
    return {row.host for row in conn.execute(query)
            if not is_up(row.forced_down, heartbeat_age(row, now),
                         down_time)}


class External(Protocol):
    """A host source besides our own tables (nova's cells,
    :class:`scheduler.novadb.source.NovaSource`): it owns liveness, and
    knows where instances are that hold no claim here."""

    def liveness(self) -> tuple[set[str], str | None]:
        """The hosts down now, and a note every refusal carries (hosts
        skipped, and why), or None."""

    def instance_hosts(self, uuids: list[str]) -> dict[str, str]:
        """uuid -> host, for those of ``uuids`` it has on a host."""
