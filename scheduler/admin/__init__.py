"""Operator actions on services, hosts, nodes and aggregates (behind
``scheduler-manage``).

Every function takes the engine and plain values (no configuration), runs in
one transaction, and reports what an operator got wrong as
:class:`~scheduler.exception.NotFound` (an unknown host or aggregate) or
:class:`~scheduler.exception.InvalidRequest` (a request that cannot be
done as asked); the message is meant to be shown as it is.

Aggregates are soft-deleted like nova's (``deleted = id``, ``deleted_at``);
every write is a plain INSERT or UPDATE, so the change-tracking triggers
(migration 0003) see it and running schedulers pick it up.
"""
from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import unicodedata
import uuid as uuidlib

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.hosts import capacity
from scheduler.db import allocations
from scheduler import exception
from scheduler.hosts import liveness
from scheduler.db import clock
from scheduler.db import compute
from scheduler.hosts.rows import aggregates_by_host
from scheduler.db import models
from scheduler.progress import Start


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
    """
    if disabled and reason:
        _check_text("disabled reason", reason)
    s = models.services
    with engine.begin() as conn:
        result = conn.execute(
            s.update().where(s.c.host == host,
                             s.c.binary == compute.COMPUTE_BINARY,
                             s.c.deleted == 0)
            .values(disabled=disabled,
                    disabled_reason=reason if disabled else None,
                    updated_at=clock.utcnow()))
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


def audit_allocations(engine: sa.Engine, default_ratios: capacity.Ratios,
                      enabled_filters: Sequence[str] = (),
                      progress: Start | None = None) -> list[dict]:
    """Nodes whose usage differs from the sum of their allocations, or whose
    allocations exceed capacity times ratio: the ratio a scheduler with
    ``enabled_filters`` holds the node to (:func:`_node_resources`); and
    deleted nodes that still hold claims (they count on no node the
    scheduler plans on; recomputing usage cannot fix them). An
    empty list means the books balance.

    :param progress: told the number of nodes; the report it returns is
        called with the number checked so far, after each node.
    """
    n = models.compute_nodes
    # Both sides of a move in flight hold usage on their nodes.
    a = allocations.usage_sides()
    sums = (sa.select(a.c.compute_node_id,
                      sa.func.sum(a.c.vcpus).label("vcpus"),
                      sa.func.sum(a.c.memory_mb).label("memory_mb"),
                      sa.func.sum(a.c.disk_gb).label("disk_gb"))
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
            # int(): SUM() of an integer column is DECIMAL on MariaDB.
            # _node_resources lists capacity.RESOURCES in order; a node
            # not judged on one (0 vCPUs) is never over capacity on it.
            checks = [
                (r["resource"], r["used"],
                 int(getattr(row, "a_" + r["resource"]) or 0), r["capacity"],
                 capacity.unjudged(res, r["total"]))
                for res, r in zip(capacity.RESOURCES, _node_resources(
                    row, default_ratios, aggregates.get(row.host, ()),
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


def fix_usage(engine: sa.Engine) -> int:
    """Set every node's usage to the sum of its allocations (bumping the
    generation, so plans made on the old numbers lose their claims).
    :returns: how many nodes changed.
    """
    n = models.compute_nodes
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


# --- compute hosts -----------------------------------------------------------

ZONE_KEY = "availability_zone"
#: Longest host, aggregate name, metadata key and value (the columns' size).
MAX_LENGTH = 255


def service_state(forced_down: bool, heartbeat_age: float | None,
                  service_down_time: float) -> str:
    """``"up"`` or ``"down"``, by :func:`scheduler.hosts.liveness.is_up`."""
    return "up" if liveness.is_up(forced_down, heartbeat_age,
                                  service_down_time) else "down"


def _zones_by_host(conn: sa.Connection, host: str | None = None
                   ) -> dict[str, list[str]]:
    """host -> sorted availability zones of its live aggregates (only hosts
    that have at least one)."""
    ah, agg, md = (models.aggregate_hosts, models.aggregates,
                   models.aggregate_metadata)
    query = (sa.select(ah.c.host, md.c.value)
             .select_from(ah.join(agg, agg.c.id == ah.c.aggregate_id)
                          .join(md, md.c.aggregate_id == agg.c.id))
             .where(ah.c.deleted == 0, agg.c.deleted == 0,
                    md.c.deleted == 0, md.c.key == ZONE_KEY))
    if host is not None:
        query = query.where(ah.c.host == host)
    zones: dict[str, set[str]] = {}
    for row in conn.execute(query):
        zones.setdefault(row.host, set()).add(row.value)
    return {h: sorted(z) for h, z in zones.items()}


def _compute_service(conn: sa.Connection, host: str) -> sa.Row:
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


def list_compute_hosts(engine: sa.Engine, service_down_time: float,
                       default_zone: str) -> list[dict]:
    """Every host with a live compute service (binary ``nova-compute``),
    sorted by host: ``host``, ``status`` (``enabled``/``disabled``),
    ``disabled_reason``, ``state`` (see :func:`service_state`; ages by the
    database's clock), ``nodes`` (how many live compute nodes) and
    ``zones`` (the ``availability_zone`` metadata of its live aggregates,
    sorted, or ``[default_zone]`` if none has one).
    """
    s, n = models.services, models.compute_nodes
    counts = (sa.select(n.c.host, sa.func.count().label("nodes"))
              .where(n.c.deleted == 0).group_by(n.c.host).subquery())
    query = (sa.select(s.c.host, s.c.disabled, s.c.disabled_reason,
                       s.c.forced_down, s.c.last_seen_up, s.c.updated_at,
                       s.c.created_at,
                       sa.func.coalesce(counts.c.nodes, 0).label("nodes"))
             .select_from(s.outerjoin(counts, counts.c.host == s.c.host))
             .where(s.c.binary == compute.COMPUTE_BINARY, s.c.deleted == 0)
             .order_by(s.c.host))
    with engine.connect() as conn:
        now = clock.db_time(conn)
        rows = conn.execute(query).all()
        zones = _zones_by_host(conn)
    return [{"host": row.host,
             "status": "disabled" if row.disabled else "enabled",
             "disabled_reason": row.disabled_reason,
             "state": service_state(row.forced_down,
                                    liveness.heartbeat_age(row, now),
                                    service_down_time),
             "nodes": row.nodes,
             "zones": zones.get(row.host, [default_zone])}
            for row in rows]


#: A compute_nodes row's columns per resource: (name in reports,
#: resource, total, usage, own ratio).
def _node_resources(row: sa.Row, default_ratios: capacity.Ratios,
                    aggregates: Sequence, enabled_filters: Sequence[str]
                    ) -> list[dict]:
    """A compute_nodes ``row``'s ``resource``, ``total``, ``ratio``,
    ``capacity`` (total × ratio) and ``used``, for vcpus, memory_mb and
    disk_gb: the ratio a scheduler with ``enabled_filters`` holds the node
    to (:func:`scheduler.hosts.capacity.ratio_in_force`, as the filters and the
    claim: an aggregate's under the Aggregate* filters), from the node's
    own, else ``default_ratios``'."""
    out = []
    for resource in capacity.RESOURCES:
        total = getattr(row, resource.node_total)
        ratio = capacity.ratio_in_force(
            resource, capacity.ratio(getattr(row, resource.ratio),
                                     default_ratios.of(resource)),
            aggregates, enabled_filters)
        out.append({"resource": resource.flavor, "total": total,
                    "ratio": ratio,
                    "capacity": capacity.limit(total, ratio),
                    "used": getattr(row, resource.node_used)})
    return out


def describe_host(engine: sa.Engine, host: str, *,
                  service_down_time: float, default_zone: str,
                  default_ratios: capacity.Ratios,
                  enabled_filters: Sequence[str] = ()) -> dict:
    """One compute host in detail.

    :param default_ratios: for a node that has none of its own.
    :param enabled_filters: the scheduler's filters: ``ratio`` is the one
        they hold the node to (:func:`_node_resources`, as the audit).
    :returns: the fields of :func:`list_compute_hosts` (but ``nodes`` is a
        list), and ``aggregates``: ``[{"name", "metadata"}]`` sorted by
        name. Each node: ``node`` (hypervisor hostname), ``uuid``,
        ``resources``: for ``vcpus``, ``memory_mb`` and ``disk_gb`` a dict
        of ``resource``, ``total``, ``ratio``, ``capacity`` (total × ratio)
        and ``used`` (the node's usage now); and ``projects``: the node's
        rows in ``allocations`` summed per ``project_id`` (``instances``,
        ``moving`` (how many of them are one side of a move in flight:
        both sides count), ``vcpus``, ``memory_mb``, ``disk_gb``), sorted
        by project, claims without a project last (``project_id`` None).
    :raises NotFound: ``no compute host 'X'`` (no live compute service).
    """
    n, a = models.compute_nodes, allocations.usage_sides()
    with engine.connect() as conn:
        now = clock.db_time(conn)
        service = _compute_service(conn, host)
        # The stored name: MariaDB matched ``host`` case-insensitively.
        host = service.host
        zones = _zones_by_host(conn, host).get(host, [default_zone])
        nodes = conn.execute(
            sa.select(n).where(n.c.host == host, n.c.deleted == 0)
            .order_by(n.c.hypervisor_hostname, n.c.id)).all()
        usage: dict[int, list[dict]] = {}
        if nodes:
            for row in conn.execute(
                    sa.select(a.c.compute_node_id, a.c.project_id,
                              sa.func.count().label("instances"),
                              sa.func.count(a.c.moving).label("moving"),
                              sa.func.sum(a.c.vcpus).label("vcpus"),
                              sa.func.sum(a.c.memory_mb).label("memory_mb"),
                              sa.func.sum(a.c.disk_gb).label("disk_gb"))
                    .where(a.c.compute_node_id.in_([r.id for r in nodes]))
                    .group_by(a.c.compute_node_id, a.c.project_id)):
                usage.setdefault(row.compute_node_id, []).append(
                    {"project_id": row.project_id,
                     "instances": row.instances, "moving": row.moving,
                     "vcpus": int(row.vcpus),
                     "memory_mb": int(row.memory_mb),
                     "disk_gb": int(row.disk_gb)})
        aggregates = [
            {"name": agg["name"], "metadata": agg["metadata"]}
            for agg in _aggregates(conn, host=host)]
        host_aggregates = aggregates_by_host(
            compute.aggregates(conn)).get(host, ())
    out_nodes = []
    for row in nodes:
        resources = _node_resources(row, default_ratios, host_aggregates,
                                    enabled_filters)
        projects = sorted(usage.get(row.id, []),
                          key=lambda p: (p["project_id"] is None,
                                         p["project_id"] or ""))
        out_nodes.append({"node": row.hypervisor_hostname, "uuid": row.uuid,
                          "resources": resources, "projects": projects})
    return {"host": service.host,
            "status": "disabled" if service.disabled else "enabled",
            "disabled_reason": service.disabled_reason,
            "state": service_state(service.forced_down,
                                   liveness.heartbeat_age(service, now),
                                   service_down_time),
            "zones": zones, "nodes": out_nodes, "aggregates": aggregates}


# --- aggregates ----------------------------------------------------------------

def _aggregates(conn: sa.Connection, name: str | None = None,
                host: str | None = None) -> list[dict]:
    """Live aggregates (all, the one named ``name``, or those ``host`` is
    in) as ``{"id", "uuid", "name", "hosts", "metadata"}``, sorted by name
    then id; ``hosts`` sorted."""
    agg, ah, md = (models.aggregates, models.aggregate_hosts,
                   models.aggregate_metadata)
    query = (sa.select(agg.c.id, agg.c.uuid, agg.c.name)
             .where(agg.c.deleted == 0).order_by(agg.c.name, agg.c.id))
    if name is not None:
        query = query.where(agg.c.name == name)
    if host is not None:
        query = query.where(agg.c.id.in_(
            sa.select(ah.c.aggregate_id).where(ah.c.host == host,
                                               ah.c.deleted == 0)))
    found = {row.id: {"id": row.id, "uuid": row.uuid, "name": row.name,
                      "hosts": [], "metadata": {}}
             for row in conn.execute(query)}
    if not found:
        return []
    ids = list(found)
    for row in conn.execute(
            sa.select(ah.c.aggregate_id, ah.c.host)
            .where(ah.c.aggregate_id.in_(ids), ah.c.deleted == 0)
            .order_by(ah.c.host)):
        found[row.aggregate_id]["hosts"].append(row.host)
    for row in conn.execute(
            sa.select(md.c.aggregate_id, md.c.key, md.c.value)
            .where(md.c.aggregate_id.in_(ids), md.c.deleted == 0)
            .order_by(md.c.key)):
        found[row.aggregate_id]["metadata"][row.key] = row.value
    return list(found.values())


def _aggregate_id(conn: sa.Connection, name: str) -> int:
    """The id of the live aggregate named ``name``.
    :raises NotFound: ``no aggregate 'X'``.
    """
    agg = models.aggregates
    found = conn.execute(sa.select(agg.c.id).where(
        agg.c.name == name, agg.c.deleted == 0)).scalars().first()
    if found is None:
        raise exception.NotFound(f"no aggregate {name!r}")
    return found


def _lock_aggregates(conn: sa.Connection) -> None:
    """Make this transaction the only aggregate writer until it ends.

    Two commands that each check a name or key, then write it, would both
    pass their checks if each ran before the other committed. Every
    aggregate write updates the change counter's row (migration 0003's
    triggers), so its writers queue on that row anyway, only too late:
    after their checks. Taking it first (an UPDATE that changes nothing:
    the row lock on PostgreSQL and MariaDB, the write lock on SQLite)
    makes each check see every earlier writer's commit. Claims wait for it
    for as long as one aggregate command takes.
    """
    c = models.change_counter
    conn.execute(c.update().where(c.c.id == 1)
                 .values(aggregates=c.c.aggregates))


def _check_text(what: str, value: str) -> None:
    """:raises InvalidRequest: ``value`` is empty or longer than the column.
    """
    if not value:
        raise exception.InvalidRequest(f"{what} must not be empty")
    if len(value) > MAX_LENGTH:
        raise exception.InvalidRequest(
            f"{what} is longer than {MAX_LENGTH} characters")


def _check_zone(zone: str) -> None:
    """An availability zone nova's API could name (its ``az_name``
    format): not empty, no ':' (a request's ``zone:host:node`` forces a
    host), no blanks at either end.

    :raises InvalidRequest: naming the zone.
    """
    _check_text("availability zone", zone)
    if ":" in zone or zone != zone.strip():
        raise exception.InvalidRequest(
            f"availability zone {zone!r} has a ':' or leading or trailing "
            f"blanks; nova could not name it in a request")


def _check_same_key(key: str, keys: Iterable[str]) -> None:
    """nova reads metadata keys as dict keys (``availability_zone`` only
    so spelled), while MariaDB's unique key and comparisons take ``SSD``
    (or ``ssd ``, or ``sśd``) for ``ssd``: a key that differs from one of
    ``keys`` only so would overwrite the other on MariaDB (past the zone
    check, for ``availability_zone``) and be a second key on SQLite and
    PostgreSQL. Every database refuses it (nova's API does on MariaDB).

    :raises InvalidRequest: naming both keys.
    """
    folded = _folded_key(key)
    for other in keys:
        if other != key and _folded_key(other) == folded:
            raise exception.InvalidRequest(
                f"metadata key {key!r} differs from {other!r} only in "
                f"case, accents or trailing blanks, which MariaDB does not "
                f"tell apart; use {other!r}")


def _folded_key(key: str) -> str:
    """``key`` as MariaDB's default collations compare it: without regard
    to case or accents (``café`` is ``CAFE``), and (PAD SPACE) to
    trailing blanks."""
    decomposed = unicodedata.normalize("NFKD", key.rstrip(" "))
    return "".join(c for c in decomposed
                   if not unicodedata.combining(c)).casefold()


def list_aggregates(engine: sa.Engine) -> list[dict]:
    """Every live aggregate, sorted by name: ``id``, ``uuid``, ``name``,
    ``hosts`` (sorted host names) and ``metadata`` (key -> value)."""
    with engine.connect() as conn:
        return _aggregates(conn)


def get_aggregate(engine: sa.Engine, name: str) -> dict:
    """The live aggregate ``name``, shaped as in :func:`list_aggregates`.
    :raises NotFound: ``no aggregate 'X'``.
    """
    with engine.connect() as conn:
        found = _aggregates(conn, name=name)
    if not found:
        raise exception.NotFound(f"no aggregate {name!r}")
    return found[0]


def create_aggregate(engine: sa.Engine, name: str,
                     zone: str | None = None) -> dict:
    """Create aggregate ``name``, in availability zone ``zone`` if given
    (its ``availability_zone`` metadata).
    :returns: the new aggregate, shaped as in :func:`list_aggregates`.
    :raises InvalidRequest: the name is empty or too long, the zone one
        nova could not name (:func:`_check_zone`), or a live aggregate
        already has that name.
    """
    _check_text("aggregate name", name)
    if "," in name or name != name.strip():
        raise exception.InvalidRequest(
            f"aggregate name {name!r} has a comma or leading or trailing "
            f"blanks; a request could not name it")
    if zone is not None:
        _check_zone(zone)
    agg = models.aggregates
    with engine.begin() as conn:
        _lock_aggregates(conn)
        taken = conn.execute(sa.select(agg.c.id).where(
            agg.c.name == name, agg.c.deleted == 0)).first()
        if taken is not None:
            raise exception.InvalidRequest(
                f"aggregate {name!r} already exists")
        agg_id = conn.execute(agg.insert().values(
            uuid=str(uuidlib.uuid4()), name=name, created_at=clock.utcnow(),
            deleted=0)).inserted_primary_key[0]
        if zone is not None:
            conn.execute(models.aggregate_metadata.insert().values(
                aggregate_id=agg_id, key=ZONE_KEY, value=zone,
                created_at=clock.utcnow(), deleted=0))
        return _aggregates(conn, name=name)[0]


def _soft_delete(table: sa.Table, *where) -> sa.Update:
    """``UPDATE table SET deleted = id, deleted_at = now WHERE ...`` for
    live rows (nova's soft delete)."""
    return (table.update().where(table.c.deleted == 0, *where)
            .values(deleted=table.c.id, deleted_at=clock.utcnow(),
                    updated_at=clock.utcnow()))


def delete_aggregate(engine: sa.Engine, name: str,
                     force: bool = False) -> list[str]:
    """Soft-delete aggregate ``name`` with its host memberships and
    metadata.
    :param force: delete it even if hosts are still in it (they leave it).
    :returns: the hosts that were in it (sorted).
    :raises NotFound: ``no aggregate 'X'``.
    :raises InvalidRequest: hosts are still in it and ``force`` is false.
    """
    agg, ah, md = (models.aggregates, models.aggregate_hosts,
                   models.aggregate_metadata)
    with engine.begin() as conn:
        agg_id = _aggregate_id(conn, name)
        hosts = list(conn.execute(
            sa.select(ah.c.host).where(ah.c.aggregate_id == agg_id,
                                       ah.c.deleted == 0)
            .order_by(ah.c.host)).scalars())
        if hosts and not force:
            raise exception.InvalidRequest(
                f"aggregate {name!r} still has {len(hosts)} host(s): "
                f"{', '.join(hosts)}; remove them first or use --force")
        conn.execute(_soft_delete(ah, ah.c.aggregate_id == agg_id))
        conn.execute(_soft_delete(md, md.c.aggregate_id == agg_id))
        conn.execute(_soft_delete(agg, agg.c.id == agg_id))
    return hosts


def add_aggregate_host(engine: sa.Engine, name: str, host: str) -> None:
    """Put compute host ``host`` in aggregate ``name``.
    :raises NotFound: ``no aggregate 'X'``, or ``no compute host 'X'``
        (no live compute service on it).
    :raises InvalidRequest: the host is already in the aggregate.
    """
    ah = models.aggregate_hosts
    already = exception.InvalidRequest(
        f"host {host!r} is already in aggregate {name!r}")
    try:
        with engine.begin() as conn:
            agg_id = _aggregate_id(conn, name)
            # The stored name: MariaDB matches ``host`` case-insensitively.
            host = _compute_service(conn, host).host
            if conn.execute(sa.select(ah.c.id).where(
                    ah.c.aggregate_id == agg_id, ah.c.host == host,
                    ah.c.deleted == 0)).first() is not None:
                raise already
            conn.execute(ah.insert().values(
                host=host, aggregate_id=agg_id, created_at=clock.utcnow(),
                deleted=0))
    except db_exc.DBDuplicateEntry as e:   # a concurrent add won
        raise already from e


def remove_aggregate_host(engine: sa.Engine, name: str, host: str) -> None:
    """Take ``host`` out of aggregate ``name`` (the host need not be a
    live compute host any more).
    :raises NotFound: ``no aggregate 'X'``, or the host is not in it.
    """
    ah = models.aggregate_hosts
    with engine.begin() as conn:
        agg_id = _aggregate_id(conn, name)
        removed = conn.execute(_soft_delete(
            ah, ah.c.aggregate_id == agg_id, ah.c.host == host)).rowcount
    if not removed:
        raise exception.NotFound(
            f"host {host!r} is not in aggregate {name!r}")


def set_aggregate_metadata(engine: sa.Engine, name: str,
                           metadata: Mapping[str, str | None]
                           ) -> dict[str, str]:
    """Set metadata keys of aggregate ``name``; a value that is empty or
    None removes its key (removing an absent key is not an error). Keys not
    mentioned are kept. ``availability_zone`` is the aggregate's zone.
    :returns: the aggregate's metadata afterwards.
    :raises NotFound: ``no aggregate 'X'``.
    :raises InvalidRequest: no keys given, or a key is empty, a key or
        value is too long, the zone is one nova could not name
        (:func:`_check_zone`), or a key is another key of the aggregate,
        another key asked for, or ``availability_zone`` in another case
        (:func:`_check_same_key`; but a key stored so may be removed).
    """
    if not metadata:
        raise exception.InvalidRequest("no metadata to set")
    for key, value in metadata.items():
        _check_text("metadata key", key)
        if value and len(value) > MAX_LENGTH:
            raise exception.InvalidRequest(
                f"value of metadata key {key!r} is longer than "
                f"{MAX_LENGTH} characters")
        if value and key == ZONE_KEY:
            _check_zone(value)
    md = models.aggregate_metadata
    with engine.begin() as conn:
        _lock_aggregates(conn)
        agg_id = _aggregate_id(conn, name)
        stored = list(conn.execute(sa.select(md.c.key).where(
            md.c.aggregate_id == agg_id, md.c.deleted == 0)).scalars())
        for i, (key, value) in enumerate(metadata.items()):
            # A key stored as spelled (from before this check: a second
            # spelling on SQLite or PostgreSQL, a zone key in another
            # case) may be removed, which is the only way to remove it:
            # that deletes its own row alone, on every database.
            if value or key not in stored:
                _check_same_key(
                    key, [ZONE_KEY, *list(metadata)[:i], *stored])
        for key, value in metadata.items():
            live = (md.c.aggregate_id == agg_id, md.c.key == key)
            # By the database's comparison: on MariaDB (as its unique key)
            # only ``key`` itself, other spellings having been refused.
            found = conn.execute(sa.select(md.c.value).where(
                md.c.deleted == 0, *live)).first()
            if not value:
                if found is not None:
                    conn.execute(_soft_delete(md, *live))
            elif found is None:
                conn.execute(md.insert().values(
                    aggregate_id=agg_id, key=key, value=value,
                    created_at=clock.utcnow(), deleted=0))
            elif found.value != value:
                conn.execute(md.update().where(md.c.deleted == 0, *live)
                             .values(value=value, updated_at=clock.utcnow()))
        current = {row.key: row.value for row in conn.execute(
            sa.select(md.c.key, md.c.value).where(
                md.c.aggregate_id == agg_id, md.c.deleted == 0))}
    return dict(sorted(current.items()))
