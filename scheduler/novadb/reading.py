"""The reads of nova's databases: one cell's nodes, services, instances
and migrations, and the API database's aggregates and host mappings.

Every read is one SELECT naming its columns; none needs an index nova's
schema does not have, so a read by what changed is a scan of a few
thousand rows in the database, returning only the changed ones.
"""
from __future__ import annotations

import dataclasses
import datetime
from typing import Iterable

import sqlalchemy as sa

from scheduler.novadb import schema

#: The binary of nova's compute service.
COMPUTE_BINARY = "nova-compute"
#: Nova's migration statuses of a migration no longer in progress
#: (``migration_get_in_progress_by_host_and_node``'s).
ENDED = frozenset(("confirmed", "reverted", "error", "failed", "completed",
                   "cancelled", "done"))
#: At most this many uuids in one ``IN``.
CHUNK = 500


def nodes(conn: sa.Connection, since: datetime.datetime | None
          ) -> list[sa.Row]:
    """The compute node rows of a cell written at or after ``since``
    (created, updated or deleted then; all of them for None), deleted ones
    included (``deleted`` non-zero)."""
    n = schema.compute_nodes
    query = sa.select(*n.c)
    if since is not None:
        query = query.where(sa.or_(n.c.updated_at >= since,
                                   n.c.created_at >= since,
                                   n.c.deleted_at >= since))
    return conn.execute(query).all()


def services(conn: sa.Connection,
             cutoff: datetime.datetime | None = None) -> list[sa.Row]:
    """The live compute services of a cell; with ``cutoff``, only those
    of note: disabled, forced down, or not heard from since ``cutoff``
    (every other one is enabled and up). Heartbeats rewrite every row every
    10 s, so nothing else tells which changed; the few of note are cheap
    to read every time."""
    s = schema.services
    query = (sa.select(s.c.host, s.c.disabled, s.c.disabled_reason,
                       s.c.forced_down, s.c.last_seen_up, s.c.created_at)
             .where(s.c.binary == COMPUTE_BINARY, s.c.deleted == 0))
    if cutoff is not None:
        query = query.where(sa.or_(
            s.c.disabled == sa.true(), s.c.forced_down == sa.true(),
            s.c.last_seen_up.is_(None), s.c.last_seen_up < cutoff))
    return conn.execute(query).all()


def _chunks(values: list[str]) -> Iterable[list[str]]:
    for i in range(0, len(values), CHUNK):
        yield values[i:i + CHUNK]


def instances(conn: sa.Connection, uuids: Iterable[str]
              ) -> dict[str, sa.Row]:
    """uuid -> the instance row of each of ``uuids`` the cell has (deleted
    ones too)."""
    i = schema.instances
    out: dict[str, sa.Row] = {}
    for chunk in _chunks(sorted(set(uuids))):
        for row in conn.execute(
                sa.select(i.c.uuid, i.c.host, i.c.node, i.c.vm_state,
                          i.c.task_state, i.c.deleted,
                          # A row never updated has its creation's time.
                          sa.func.coalesce(i.c.updated_at, i.c.created_at)
                          .label("updated_at"))
                .where(i.c.uuid.in_(chunk))):
            # A uuid deleted and made again: the live row wins.
            if row.uuid not in out or not row.deleted:
                out[row.uuid] = row
    return out


def migrations(conn: sa.Connection, uuids: Iterable[str]
               ) -> dict[str, sa.Row]:
    """instance uuid -> its latest migration in progress, for those of
    ``uuids`` that have one."""
    m = schema.migrations
    out: dict[str, sa.Row] = {}
    for chunk in _chunks(sorted(set(uuids))):
        for row in conn.execute(
                sa.select(m.c.id, m.c.instance_uuid, m.c.source_compute,
                          m.c.source_node, m.c.dest_compute, m.c.dest_node,
                          m.c.status,
                          sa.func.coalesce(m.c.updated_at, m.c.created_at)
                          .label("updated_at"))
                .where(m.c.instance_uuid.in_(chunk), m.c.deleted == 0,
                       m.c.status.not_in(sorted(ENDED)))
                .order_by(m.c.id)):
            out[row.instance_uuid] = row
    return out


def api_fingerprint(api_conn: sa.Connection) -> tuple:
    """What changes whenever a host mapping, an aggregate, its hosts or
    its metadata is written: each table's row count, highest id and
    latest update, in one statement (nova deletes these rows for good,
    and stamps every update)."""
    parts = []
    for t in (schema.host_mappings, schema.aggregates,
              schema.aggregate_hosts, schema.aggregate_metadata):
        parts += [sa.select(sa.func.count()).select_from(t)
                  .scalar_subquery(),
                  sa.select(sa.func.max(t.c.id)).scalar_subquery(),
                  sa.select(sa.func.max(t.c.updated_at)).scalar_subquery()]
    return tuple(api_conn.execute(sa.select(*parts)).one())


def host_cells(api_conn: sa.Connection) -> dict[str, str]:
    """host -> the uuid of its cell, from the API database's host
    mappings (what ``nova-manage cell_v2 discover_hosts`` wrote)."""
    h, c = schema.host_mappings, schema.cell_mappings
    return {row.host: row.uuid for row in api_conn.execute(
        sa.select(h.c.host, c.c.uuid).join(c, c.c.id == h.c.cell_id))}


@dataclasses.dataclass(frozen=True)
class Aggregate:
    """One of nova's aggregates as the API database has it."""
    uuid: str
    name: str
    hosts: frozenset[str]
    metadata: tuple[tuple[str, str], ...]


def aggregates(api_conn: sa.Connection) -> dict[str, Aggregate]:
    """uuid -> each aggregate of nova's API database (nova deletes them
    for good there: no soft-deleted rows)."""
    a, h, m = (schema.aggregates, schema.aggregate_hosts,
               schema.aggregate_metadata)
    hosts: dict[int, set[str]] = {}
    for row in api_conn.execute(sa.select(h.c.aggregate_id, h.c.host)):
        hosts.setdefault(row.aggregate_id, set()).add(row.host)
    metadata: dict[int, list[tuple[str, str]]] = {}
    for row in api_conn.execute(
            sa.select(m.c.aggregate_id, m.c.key, m.c.value)):
        metadata.setdefault(row.aggregate_id, []).append((row.key,
                                                          row.value))
    return {row.uuid: Aggregate(row.uuid, row.name,
                                frozenset(hosts.get(row.id, ())),
                                tuple(sorted(metadata.get(row.id, ()))))
            for row in api_conn.execute(sa.select(a.c.id, a.c.uuid,
                                                  a.c.name))}
