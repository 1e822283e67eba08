"""The writes into our own tables that mirror nova's hosts.

A node's row here holds its compute's report, plus the claims the report
does not include yet (:mod:`scheduler.novadb.included`): its ``*_used``
columns are what the host table plans on and what a claim's guarded
UPDATE adds to, so claims stay atomic in our database while nova's
computes report into theirs. Every write is a plain INSERT or UPDATE: the
change-tracking triggers (migration 0003) see it and the host table
refreshes only what changed.
"""
from __future__ import annotations

import collections
from typing import Iterable, Iterator

import sqlalchemy as sa

from scheduler.db import clock
from scheduler.db import compute
from scheduler.db import models
from scheduler.novadb.reading import Aggregate

#: Nodes per transaction: on PostgreSQL the change-tracking trigger
#: updates one counter row per node written, and thousands of updates of
#: one row in one transaction grow quadratically.
BATCH = 200

#: The columns copied from a nova compute node row as they are.
COPIED = ("uuid", "host", "hypervisor_hostname", "hypervisor_type",
          "hypervisor_version", "host_ip", "vcpus", "memory_mb", "local_gb",
          "disk_available_least", "current_workload", "cpu_info",
          "supported_instances", "metrics", "stats", "cpu_allocation_ratio",
          "ram_allocation_ratio", "disk_allocation_ratio")

_A = models.allocations
_N = models.compute_nodes
_S = models.services


def our_nodes(conn: sa.Connection) -> dict[str, int]:
    """nova node uuid -> our node id, for our live nodes."""
    return {row.uuid: row.id for row in conn.execute(
        sa.select(_N.c.uuid, _N.c.id).where(_N.c.deleted == 0,
                                            _N.c.uuid.is_not(None)))}


def unseen_claims(conn: sa.Connection) -> list[sa.Row]:
    """The claims whose inclusion in a report is still to be seen: never
    seen on the node they are on (new, moved, relocated), or moving from
    a source not marked as its report's."""
    return conn.execute(
        sa.select(_A.c.consumer_uuid, _A.c.compute_node_id,
                  _A.c.source_node_id)
        .where(sa.or_(_A.c.reported_node_id.is_(None),
                      _A.c.reported_node_id != _A.c.compute_node_id,
                      sa.and_(_A.c.source_node_id.is_not(None),
                              _A.c.source_reported == sa.false())))).all()


def _batches(items: list, size: int = BATCH) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def write_nodes(engine: sa.Engine, reports: dict[int, sa.Row],
                arrived: set[tuple[str, int]]) -> None:
    """Write each of our nodes ``reports`` names (our id -> its nova row):
    the report, plus the claims on it the report does not include. Mark
    the claims ``arrived`` names ((consumer uuid, node id): its report
    includes them) as seen, and confirmed: the instance is there.

    The source of a move is what its compute reports: nova's tracker
    counts an outgoing migration until it ends, and once the instance has
    left, nothing is there. So a moving claim's source is marked its
    report's here and counts on top of nothing.

    Per batch, one transaction that locks the nodes first, so a claim
    either commits before (and is summed here) or after (and adds to what
    this wrote)."""
    for batch in _batches(sorted(reports)):
        with engine.begin() as conn:
            _write_batch(conn, {i: reports[i] for i in batch}, arrived)


def _write_batch(conn: sa.Connection, reports: dict[int, sa.Row],
                 arrived: set[tuple[str, int]]) -> None:
    ids = sorted(reports)
    # Locked in id order, as claims lock them: no deadlock between us.
    conn.execute(sa.select(_N.c.id).where(_N.c.id.in_(ids))
                 .order_by(_N.c.id).with_for_update()).all()
    claims = conn.execute(sa.select(
        _A.c.id, _A.c.consumer_uuid, _A.c.compute_node_id,
        _A.c.source_node_id, _A.c.vcpus, _A.c.memory_mb, _A.c.disk_gb,
        _A.c.source_reported, _A.c.reported_node_id).where(sa.or_(
            _A.c.compute_node_id.in_(ids),
            _A.c.source_node_id.in_(ids)))).all()
    pending: dict[int, list[int]] = collections.defaultdict(
        lambda: [0, 0, 0, 0])
    seen: dict[bool, list[dict]] = {True: [], False: []}   # by moving
    sources: list[dict] = []
    for c in claims:
        node = c.compute_node_id
        if node in reports and c.reported_node_id != node:
            if (c.consumer_uuid, node) in arrived:
                seen[c.source_node_id is not None].append(
                    {"b_id": c.id, "b_node": node})
            else:
                _add(pending[node], c.vcpus, c.memory_mb, c.disk_gb)
        if c.source_node_id in reports and not c.source_reported:
            sources.append({"b_id": c.id, "b_node": c.source_node_id})
    conn.execute(_UPDATE_NODE, [
        _node_values(node_id, reports[node_id], pending.get(node_id))
        for node_id in ids])
    for moving, rows in seen.items():
        if rows:
            conn.execute(_SEEN_MOVING if moving else _SEEN, rows)
    if sources:
        conn.execute(_SOURCE_SEEN, sources)


def _add(total: list[int], vcpus: int, memory_mb: int, disk_gb: int
         ) -> None:
    total[0] += vcpus
    total[1] += memory_mb
    total[2] += disk_gb
    total[3] += 1


def _node_values(node_id: int, report: sa.Row, pending: list[int] | None
                 ) -> dict:
    vcpus, memory, disk, count = pending or (0, 0, 0, 0)
    return {"b_id": node_id, **{c: getattr(report, c) for c in COPIED},
            "vcpus_used": report.vcpus_used + vcpus,
            "memory_mb_used": report.memory_mb_used + memory,
            "local_gb_used": report.local_gb_used + disk,
            "free_ram_mb": (report.free_ram_mb or 0) - memory,
            "free_disk_gb": (report.free_disk_gb or 0) - disk,
            "running_vms": (report.running_vms or 0) + count}


_UPDATE_NODE = (_N.update().where(_N.c.id == sa.bindparam("b_id"))
                .values(generation=_N.c.generation + 1,
                        updated_at=clock.utcnow()))
# A claim seen in its node's report: it no longer counts on top of it. Not
# moving, its instance is there: confirmed, as nova's casts confirm it (a
# move's end is theirs: confirm, revert).
_SEEN_MOVING = (_A.update().where(
    _A.c.id == sa.bindparam("b_id"),
    _A.c.compute_node_id == sa.bindparam("b_node"))
    .values(reported_node_id=_A.c.compute_node_id))
_SEEN = _SEEN_MOVING.values(expires_at=None)
_SOURCE_SEEN = (_A.update().where(
    _A.c.id == sa.bindparam("b_id"),
    _A.c.source_node_id == sa.bindparam("b_node"))
    .values(source_reported=True))


def add_nodes(engine: sa.Engine, reports: list[sa.Row]) -> None:
    """Our rows for nova's nodes new to us (no claim can be on them)."""
    for batch in _batches(reports):
        with engine.begin() as conn:
            conn.execute(_N.insert(), [
                {**{c: getattr(r, c) for c in COPIED},
                 "vcpus_used": r.vcpus_used,
                 "memory_mb_used": r.memory_mb_used,
                 "local_gb_used": r.local_gb_used,
                 "free_ram_mb": r.free_ram_mb, "free_disk_gb": r.free_disk_gb,
                 "running_vms": r.running_vms or 0, "generation": 0,
                 "deleted": 0} for r in batch])


def delete_nodes(engine: sa.Engine, node_ids: Iterable[int]) -> None:
    """Soft-delete our rows of nodes nova deleted."""
    for batch in _batches(sorted(node_ids)):
        with engine.begin() as conn:
            conn.execute(_N.update().where(_N.c.id.in_(batch),
                                           _N.c.deleted == 0)
                         .values(deleted=_N.c.id, deleted_at=clock.utcnow()))


#: What our mirror of a compute service holds: (disabled,
#: disabled_reason, forced_down).
ServiceState = tuple[bool, str | None, bool]
#: A service enabled and not forced down.
ENABLED: ServiceState = (False, None, False)


def service_state(row: sa.Row) -> ServiceState:
    """(disabled, disabled_reason, forced_down) of a service row."""
    return (bool(row.disabled), row.disabled_reason, bool(row.forced_down))


def our_services(conn: sa.Connection) -> dict[str, ServiceState]:
    """host -> the state of our live compute service row."""
    return {row.host: service_state(row) for row in conn.execute(
        sa.select(_S.c.host, _S.c.disabled, _S.c.disabled_reason,
                  _S.c.forced_down)
        .where(_S.c.binary == compute.COMPUTE_BINARY, _S.c.deleted == 0))}


def write_services(engine: sa.Engine, new: dict[str, ServiceState],
                   changed: dict[str, ServiceState],
                   gone: Iterable[str]) -> None:
    """Create, change and soft-delete our compute service rows."""
    with engine.begin() as conn:
        if new:
            conn.execute(_S.insert(), [
                {"host": host, "binary": compute.COMPUTE_BINARY,
                 "topic": compute.COMPUTE_TOPIC, "report_count": 0,
                 "disabled": s[0], "disabled_reason": s[1],
                 "forced_down": s[2], "deleted": 0, "version": 0}
                for host, s in sorted(new.items())])
        for host, s in sorted(changed.items()):
            conn.execute(_S.update().where(
                _S.c.host == host, _S.c.binary == compute.COMPUTE_BINARY,
                _S.c.deleted == 0).values(
                    disabled=s[0], disabled_reason=s[1], forced_down=s[2],
                    updated_at=clock.utcnow()))
        gone = sorted(gone)
        if gone:
            conn.execute(_S.update().where(
                _S.c.host.in_(gone), _S.c.binary == compute.COMPUTE_BINARY,
                _S.c.deleted == 0).values(deleted=_S.c.id,
                                          deleted_at=clock.utcnow()))


def write_aggregates(engine: sa.Engine, old: dict[str, Aggregate],
                     new: dict[str, Aggregate]) -> None:
    """Make our aggregates what nova's are, changing only what differs
    between ``old`` (what we mirrored last) and ``new``."""
    ag, ah, am = (models.aggregates, models.aggregate_hosts,
                  models.aggregate_metadata)
    with engine.begin() as conn:
        now = clock.db_time(conn)
        ids = {row.uuid: row.id for row in conn.execute(
            sa.select(ag.c.uuid, ag.c.id).where(ag.c.deleted == 0,
                                                ag.c.uuid.is_not(None)))}
        for uuid in sorted(old.keys() - new.keys()):
            if uuid in ids:
                agg_id = ids[uuid]
                for table, column in ((ah, ah.c.aggregate_id),
                                      (am, am.c.aggregate_id),
                                      (ag, ag.c.id)):
                    conn.execute(table.update().where(
                        column == agg_id, table.c.deleted == 0).values(
                            deleted=table.c.id, deleted_at=now))
        for uuid, agg in sorted(new.items()):
            before = old.get(uuid)
            if before == agg:
                continue
            if uuid not in ids:
                ids[uuid] = conn.execute(ag.insert().values(
                    uuid=uuid, name=agg.name, deleted=0,
                    created_at=now)).inserted_primary_key[0]
                before = None
            agg_id = ids[uuid]
            if before is not None and before.name != agg.name:
                conn.execute(ag.update().where(ag.c.id == agg_id)
                             .values(name=agg.name, updated_at=now))
            _write_members(conn, agg_id, before, agg, now)


def _write_members(conn: sa.Connection, agg_id: int,
                   before: Aggregate | None, agg: Aggregate, now) -> None:
    """An aggregate's hosts and metadata, from ``before`` to ``agg``."""
    ah, am = models.aggregate_hosts, models.aggregate_metadata
    if before is None:
        # New to us (or a mirror that lost track): from what our tables
        # hold, not what we remember.
        for table in (ah, am):
            conn.execute(table.update().where(
                table.c.aggregate_id == agg_id, table.c.deleted == 0)
                .values(deleted=table.c.id, deleted_at=now))
        hosts_before: frozenset[str] = frozenset()
        meta_before: dict[str, str] = {}
    else:
        hosts_before = before.hosts
        meta_before = dict(before.metadata)
    removed = sorted(hosts_before - agg.hosts)
    if removed:
        conn.execute(ah.update().where(
            ah.c.aggregate_id == agg_id, ah.c.host.in_(removed),
            ah.c.deleted == 0).values(deleted=ah.c.id, deleted_at=now))
    added = sorted(agg.hosts - hosts_before)
    if added:
        conn.execute(ah.insert(), [
            {"host": h, "aggregate_id": agg_id, "deleted": 0,
             "created_at": now} for h in added])
    meta = dict(agg.metadata)
    for key in sorted(meta_before.keys() - meta.keys()):
        conn.execute(am.update().where(
            am.c.aggregate_id == agg_id, am.c.key == key,
            am.c.deleted == 0).values(deleted=am.c.id, deleted_at=now))
    for key, value in sorted(meta.items()):
        if key not in meta_before:
            conn.execute(am.insert().values(
                aggregate_id=agg_id, key=key, value=value, deleted=0,
                created_at=now))
        elif meta_before[key] != value:
            conn.execute(am.update().where(
                am.c.aggregate_id == agg_id, am.c.key == key,
                am.c.deleted == 0).values(value=value, updated_at=now))
