"""Nova's compute hosts as the database holds them: compute nodes, their
services, aggregates, and the change counters that say which to read
again (the host table is built from these).

Reads use SQLAlchemy Core on the Table objects: the scheduler wants rows,
not ORM objects. Aggregates come back as plain data (:class:`Aggregates`):
:func:`scheduler.hosts.rows.aggregates_by_host` makes the objects host
states share.
"""
from __future__ import annotations

import collections
from typing import Any, NamedTuple, Sequence

import sqlalchemy as sa

from scheduler.db import clock
from scheduler.db import compiled
from scheduler.db import models

COMPUTE_BINARY = "nova-compute"
COMPUTE_TOPIC = "compute"


class Counters(NamedTuple):
    """The counters triggers bump on tracked writes (migration 0003)."""
    nodes: int
    node_deletes: int
    services: int
    aggregates: int


_NODE_COLUMNS = [
    models.compute_nodes.c[name] for name in (
        "id", "uuid", "host", "hypervisor_hostname", "generation", "vcpus",
        "vcpus_used", "memory_mb", "memory_mb_used", "local_gb",
        "local_gb_used", "cpu_allocation_ratio", "ram_allocation_ratio",
        "disk_allocation_ratio", "running_vms", "current_workload",
        "change_seq", "deleted",
        "host_ip", "hypervisor_type", "hypervisor_version", "stats",
        "supported_instances", "metrics", "cpu_info")]


#: A compute node row as host states read it. A named tuple, not
#: SQLAlchemy's Row: a Row's attribute costs 0.2 us to read, a named
#: tuple's a tenth of that, and a host state reads some 30.
NodeRow = collections.namedtuple(
    "NodeRow", [column.name for column in _NODE_COLUMNS])


_SERVICE_COLUMNS = [
    models.services.c[name] for name in (
        "host", "disabled", "disabled_reason", "forced_down",
        "change_seq", "deleted")]


_COUNTER = models.change_counter


_COUNTER_COLUMNS = [_COUNTER.c[name].label(f"counter_{name}")
                    for name in Counters._fields]


# Built once: every request's refresh runs them, and building an expression
# (and its cache key) cost about as much as running it on SQLite.
_COUNTERS = sa.select(*_COUNTER_COLUMNS).where(_COUNTER.c.id == 1)


# Compiled: prepared on PostgreSQL (in the workers its wall time went from
# about 540 to 470 us, three alternating runs at 10,000 hosts); its rows
# are read from the driver's cursor (Compiled.rows: 184 -> 70 us of CPU in
# the workers on SQLite, 214 -> 118 on PostgreSQL).
#
# The upper bound changes no result: it is there for PostgreSQL's generic
# plan, which a prepared statement runs without planning it again (see
# create_engine's plan_cache_mode). Not knowing ``since``, the planner puts
# ``change_seq > $1`` at a third of the table, a share at which a scan of
# the whole table may look cheaper than the index; a range with both
# bounds unknown it puts at 0.5 %, where the index wins.
_CHANGES = compiled.Compiled(
    sa.select(*_COUNTER_COLUMNS, *_NODE_COLUMNS)
    .select_from(_COUNTER.outerjoin(
        models.compute_nodes,
        sa.and_(models.compute_nodes.c.change_seq > sa.bindparam("since"),
                models.compute_nodes.c.change_seq <= sa.bindparam(
                    "until", 2 ** 63 - 1, type_=sa.BigInteger))))
    .where(_COUNTER.c.id == 1))


def _counters(row: Sequence[Any]) -> Counters:
    return Counters(*row[:len(Counters._fields)])


def changes(conn: sa.Connection, since: int | None = None
            ) -> tuple[Counters, list[NodeRow]]:
    """The change counters and (with ``since``) every compute node row
    stamped after that change number, deleted ones included so the caller
    can drop them.

    One statement, the refresh's once per request: one round trip, and
    rows and counters come from one snapshot, so the counters cover every
    row returned.
    """
    if since is None:
        return _counters(conn.execute(_COUNTERS).one()), []
    rows = _CHANGES.rows(conn, {"since": since})
    # The outer join: one row with no node when nothing was stamped.
    first = len(Counters._fields)
    return _counters(rows[0]), [NodeRow._make(row[first:]) for row in rows
                                if row[first] is not None]


def compute_nodes(conn: sa.Connection, ids: list[int] | None = None
                  ) -> list[NodeRow]:
    """The live compute node rows (those of ``ids`` only, if given), with
    the columns host states need."""
    nodes = models.compute_nodes
    query = sa.select(*_NODE_COLUMNS).where(nodes.c.deleted == 0)
    if ids is not None:
        query = query.where(nodes.c.id.in_(ids))
    return [NodeRow._make(row) for row in conn.execute(query)]


def compute_services(conn: sa.Connection, since: int | None = None
                     ) -> list[sa.Row]:
    """Compute service rows, disabled ones included (ComputeFilter rejects
    them; forcing may still target them): the live ones, or (``since``)
    every row stamped after that change number, deleted ones included."""
    services = models.services
    query = sa.select(*_SERVICE_COLUMNS).where(
        services.c.binary == COMPUTE_BINARY)
    if since is None:
        query = query.where(services.c.deleted == 0)
    else:
        query = query.where(services.c.change_seq > since)
    return list(conn.execute(query))


class AggregateRow(NamedTuple):
    """A live aggregate."""
    id: int
    name: str
    uuid: str | None
    metadata: dict[str, str]


class Aggregates(NamedTuple):
    """The live aggregates and which hosts are in them."""
    #: aggregate id -> the aggregate
    rows: dict[int, AggregateRow]
    #: host -> the ids of its live aggregates, ascending (hosts in none
    #: are absent)
    hosts: dict[str, list[int]]


def aggregates(conn: sa.Connection) -> Aggregates:
    """The live aggregates, their metadata and their hosts."""
    agg = models.aggregates
    rows = {row.id: AggregateRow(row.id, row.name, row.uuid, {})
            for row in conn.execute(
                sa.select(agg.c.id, agg.c.name, agg.c.uuid)
                .where(agg.c.deleted == 0))}
    md = models.aggregate_metadata
    for row in conn.execute(sa.select(md.c.aggregate_id, md.c.key,
                                      md.c.value).where(md.c.deleted == 0)):
        if row.aggregate_id in rows:
            rows[row.aggregate_id].metadata[row.key] = row.value
    ah = models.aggregate_hosts
    hosts: dict[str, list[int]] = {}
    for row in conn.execute(sa.select(ah.c.host, ah.c.aggregate_id)
                            .where(ah.c.deleted == 0)
                            .order_by(ah.c.host, ah.c.aggregate_id)):
        if row.aggregate_id in rows:
            hosts.setdefault(row.host, []).append(row.aggregate_id)
    return Aggregates(rows, hosts)


def set_service_disabled(conn: sa.Connection, host: str, disabled: bool,
                         reason: str | None = None,
                         only_reason: str | None = None) -> int:
    """Disable (with ``reason``) or enable the live compute service of
    ``host``, in the caller's transaction; with ``only_reason``, only if
    it is disabled for that reason now (a drain enables only the host it
    disabled). The one statement that does: the operator's command and a
    drain both call it.
    :returns: the number of services changed (0: none there, or not
        disabled for ``only_reason``)."""
    s = models.services
    where = [s.c.host == host, s.c.binary == COMPUTE_BINARY, s.c.deleted == 0]
    if only_reason is not None:
        where += [s.c.disabled == sa.true(),
                  s.c.disabled_reason == only_reason]
    return conn.execute(
        s.update().where(*where)
        .values(disabled=disabled,
                disabled_reason=reason if disabled else None,
                updated_at=clock.utcnow())).rowcount
