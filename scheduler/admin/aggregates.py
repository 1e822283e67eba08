"""Operator actions on host aggregates: create and delete them, put hosts
in and take them out, set their metadata (``availability_zone`` is the
aggregate's zone), and read them back.

Aggregates are soft-deleted like nova's (``deleted = id``, ``deleted_at``);
every write is a plain INSERT or UPDATE, so the change-tracking triggers
(migration 0003) see it and running schedulers pick it up.
"""
from __future__ import annotations

from collections.abc import Mapping
import uuid as uuidlib

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.admin import services
from scheduler.admin import validation
from scheduler import exception
from scheduler.db import clock
from scheduler.db import models

ZONE_KEY = "availability_zone"


def zones_by_host(conn: sa.Connection, host: str | None = None
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


def live_aggregates(conn: sa.Connection, name: str | None = None,
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


def list_aggregates(engine: sa.Engine) -> list[dict]:
    """Every live aggregate, sorted by name: ``id``, ``uuid``, ``name``,
    ``hosts`` (sorted host names) and ``metadata`` (key -> value)."""
    with engine.connect() as conn:
        return live_aggregates(conn)


def get_aggregate(engine: sa.Engine, name: str) -> dict:
    """The live aggregate ``name``, shaped as in :func:`list_aggregates`.
    :raises NotFound: ``no aggregate 'X'``.
    :raises InvalidRequest: the name is not text
        (:func:`~scheduler.admin.validation.check_name`).
    """
    validation.check_name("aggregate name", name)
    with engine.connect() as conn:
        found = live_aggregates(conn, name=name)
    if not found:
        raise exception.NotFound(f"no aggregate {name!r}")
    return found[0]


def create_aggregate(engine: sa.Engine, name: str,
                     zone: str | None = None) -> dict:
    """Create aggregate ``name``, in availability zone ``zone`` if given
    (its ``availability_zone`` metadata).
    :returns: the new aggregate, shaped as in :func:`list_aggregates`.
    :raises InvalidRequest: the name is empty, too long or not printable
        text (:func:`~scheduler.admin.validation.check_text`), the zone one
        nova could not name
        (:func:`~scheduler.admin.validation.check_zone`), or a live
        aggregate already has that name.
    """
    validation.check_text("aggregate name", name)
    if "," in name or name != name.strip():
        raise exception.InvalidRequest(
            f"aggregate name {name!r} has a comma or leading or trailing "
            f"blanks; a request could not name it")
    if zone is not None:
        validation.check_zone(zone)
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
        return live_aggregates(conn, name=name)[0]


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
    :raises InvalidRequest: hosts are still in it and ``force`` is false,
        or the name is not text
        (:func:`~scheduler.admin.validation.check_name`).
    """
    validation.check_name("aggregate name", name)
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
    :raises InvalidRequest: the host is already in the aggregate, or a
        name is not text (:func:`~scheduler.admin.validation.check_name`).
    """
    validation.check_name("aggregate name", name)
    validation.check_name("host", host)
    ah = models.aggregate_hosts
    already = exception.InvalidRequest(
        f"host {host!r} is already in aggregate {name!r}")
    try:
        with engine.begin() as conn:
            agg_id = _aggregate_id(conn, name)
            # The stored name: MariaDB matches ``host`` case-insensitively.
            host = services.compute_service(conn, host).host
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
    :raises InvalidRequest: a name is not text
        (:func:`~scheduler.admin.validation.check_name`).
    """
    validation.check_name("aggregate name", name)
    validation.check_name("host", host)
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
    :raises InvalidRequest: no keys given, or the name is not text, a key
        is empty, a key or value is too long or not printable text (but a
        key to remove need only be text:
        :func:`~scheduler.admin.validation.check_name`), the zone is one
        nova could not name
        (:func:`~scheduler.admin.validation.check_zone`), or a key is
        another key of the aggregate, another key asked for, or
        ``availability_zone`` in another case
        (:func:`~scheduler.admin.validation.check_same_key`; but a key
        stored so may be removed).
    """
    validation.check_name("aggregate name", name)
    if not metadata:
        raise exception.InvalidRequest("no metadata to set")
    for key, value in metadata.items():
        # A key only removed may be one another tool stored with a control
        # character: naming it is the way to remove it.
        validation.check_text("metadata key", key, printable=bool(value))
        if not value:
            continue
        if len(value) > validation.MAX_LENGTH:
            raise exception.InvalidRequest(
                f"value of metadata key {key!r} is longer than "
                f"{validation.MAX_LENGTH} characters")
        validation.check_printable(f"value of metadata key {key!r}", value)
        if key == ZONE_KEY:
            validation.check_zone(value)
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
                validation.check_same_key(
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
