"""Moves: a claim that holds its destination and its source at once.

A move (resize, migration, evacuation) is claimed like any claim, with
``move`` (:func:`scheduler.claims.consume.claim`): the consumer's current
claim becomes the new claim's source (:func:`start_moves`), held until the
move ends. :func:`confirm_move` gives the source back, :func:`revert_move`
the destination; an expired move is reverted
(:func:`scheduler.claims.lifecycle.expire`, :func:`revert`). And
:func:`relocate` follows an instance nova's conductor put on another host
without asking. Each end rewrites the claim's row
(:mod:`scheduler.claims.rewrite`).
"""
from __future__ import annotations

import datetime
from typing import Collection

import sqlalchemy as sa

from scheduler.claims import rewrite
from scheduler.claims import usage
from scheduler.claims.refusals import ConsumerExists
from scheduler.db import clock
from scheduler.db import models


#: The columns of a moving claim's source (the claim it moves from).
SOURCE_COLUMNS = ("source_node_id", "source_vcpus", "source_memory_mb",
                  "source_disk_gb", "source_reported")
#: A claim not moving.
NO_SOURCE = {**dict.fromkeys(SOURCE_COLUMNS), "source_reported": False}
#: A claim no longer moving: no source, nothing to confirm on arrival.
NOT_MOVING = {**NO_SOURCE, "confirm_on_arrival": False}


def start_moves(conn: sa.Connection, consumer_uuids: list[str],
                moving_from: dict[str, tuple] | None = None
                ) -> dict[str, dict[str, int]]:
    """Take the moving consumers' claims out of the way of their new ones.

    :returns: consumer uuid -> its ``source_*`` column values: its claim
        now, or, if it was already moving, the source of that move (whose
        abandoned destination is given back here).
    """
    rows = rewrite.delete_consumers(conn, consumer_uuids)
    for r in rows:
        # The claim the move was planned against must still be the one
        # held: else a concurrent request (a twin) moved it meanwhile.
        seen = (moving_from or {}).get(r.consumer_uuid)
        if seen is not None and seen != (r.compute_node_id,
                                         r.source_node_id):
            raise ConsumerExists(
                f"consumer {r.consumer_uuid} was moved concurrently")
    usage.give_back(conn, usage.held(r for r in rows
                                     if r.source_node_id is not None))
    out = {}
    for r in rows:
        if r.source_node_id is not None:
            out[r.consumer_uuid] = {c: getattr(r, c) for c in SOURCE_COLUMNS}
        else:
            out[r.consumer_uuid] = as_source(r)
    return out


def as_source(r: sa.Row) -> dict:
    """The ``source_*`` columns of a move from the claim ``r`` (not
    moving): its node, size, and whether its node's report has it."""
    return dict(zip(SOURCE_COLUMNS, (
        r.compute_node_id, r.vcpus, r.memory_mb, r.disk_gb,
        r.reported_node_id == r.compute_node_id)))


#: A claim moving: it holds a source besides its destination.
IS_MOVING = models.allocations.c.source_node_id.is_not(None)
#: A move's end's DELETE of the moving claims of ``b_uuids``, and its
#: second look, for the same claims.
_DELETE_MOVING = rewrite.deleting(sa.and_(rewrite.of_consumers(),
                                          IS_MOVING))
_MOVING_LOOK = rewrite.looking(IS_MOVING)


def _take_moving(conn: sa.Connection,
                 consumer_uuids: list[str]) -> list[sa.Row]:
    """Delete the consumers' moving claims, for their move's end to insert
    what they become: the deleted rows. Also one that a :func:`relocate`
    (which keeps the source) re-inserted while this waited for it
    (:func:`~scheduler.claims.rewrite.until_none_missed`): its end would
    be lost, the source held for good."""
    return rewrite.until_none_missed(
        conn, consumer_uuids,
        lambda conn, uuids: conn.execute(_DELETE_MOVING,
                                         {"b_uuids": uuids}).all(),
        _MOVING_LOOK)


def revert(conn: sa.Connection, rows: list[sa.Row], ttl: int = 0,
           expired: bool = False) -> int:
    """Revert the moves of ``rows`` (moving claims, deleted): give the
    destinations back and make the sources the claims again (confirmed, or
    provisional for ``ttl`` seconds). ``expired``: nothing said the moves
    ended, their time ran out; a move waiting for its confirm remembers
    the destination it gave back (``expired_*``, see :func:`relocate`).
    :returns: how many moves were reverted."""
    usage.give_back(conn, usage.held(rows))
    expires_at = _deadline(conn, ttl) if rows else None
    rewrite.reinsert(conn, rows, lambda r: {
        "compute_node_id": r.source_node_id, "vcpus": r.source_vcpus,
        "memory_mb": r.source_memory_mb, "disk_gb": r.source_disk_gb,
        "reported_node_id": r.source_node_id if r.source_reported
        else None, "expires_at": expires_at, **NOT_MOVING,
        **(_expired_destination(r) if expired and not r.confirm_on_arrival
           else _NO_EXPIRED)})
    return len(rows)


_EXPIRED_COLUMNS = ("expired_node_id", "expired_vcpus", "expired_memory_mb",
                    "expired_disk_gb")
#: A claim remembering no expired destination.
_NO_EXPIRED = dict.fromkeys(_EXPIRED_COLUMNS)


def _expired_destination(r: sa.Row) -> dict[str, int]:
    """The ``expired_*`` columns remembering the destination of the move
    ``r`` (an allocation row, moving)."""
    return dict(zip(_EXPIRED_COLUMNS, (r.compute_node_id, r.vcpus,
                                       r.memory_mb, r.disk_gb)))


def _deadline(conn: sa.Connection, ttl: int) -> datetime.datetime | None:
    """When a claim made provisional for ``ttl`` seconds now expires (the
    database's clock); None (confirmed) for ``ttl`` 0."""
    if ttl <= 0:
        return None
    return clock.db_time(conn) + datetime.timedelta(seconds=ttl)


def confirm_move(engine: sa.Engine, consumer_uuids: list[str],
                 ttl: int = 0) -> int:
    """The consumers' moves are done: give their sources back; the
    destinations become their claims — confirmed, or with ``ttl`` > 0
    provisional, for a caller unsure the instance is still there (as
    :func:`revert_move`). Consumers not moving are left alone, so this is
    idempotent.
    :returns: how many moves were confirmed now.
    """
    if not consumer_uuids:
        return 0
    with engine.begin() as conn:
        rows = _take_moving(conn, consumer_uuids)
        usage.give_back(conn, usage.sources(rows))
        expires_at = _deadline(conn, ttl) if rows else None
        rewrite.reinsert(conn, rows, lambda r: {"expires_at": expires_at,
                                                **NOT_MOVING})
    return len(rows)


def revert_move(engine: sa.Engine, consumer_uuids: list[str],
                ttl: int = 0) -> int:
    """The consumers' moves are undone: give their destinations back; the
    sources are their claims again — confirmed, or with ``ttl`` > 0
    provisional, for a caller unsure the instance is still there. Idempotent
    like :func:`confirm_move`.
    :returns: how many moves were reverted now.
    """
    if not consumer_uuids:
        return 0
    with engine.begin() as conn:
        return revert_in(conn, consumer_uuids, ttl)


def revert_in(conn: sa.Connection, consumer_uuids: list[str],
              ttl: int = 0) -> int:
    """:func:`revert_move` inside the caller's transaction ``conn`` (a
    drain cancelled with its records)."""
    return revert(conn, _take_moving(conn, consumer_uuids), ttl)


def _relocatable() -> tuple[sa.ColumnElement[bool], ...]:
    """The claims :func:`relocate` moves onto the node ``b_node_id``: not
    a move's onto its own source, nor a claim there already unless its
    move to there expired."""
    allocs = models.allocations
    node_id = sa.bindparam("b_node_id", type_=sa.Integer)
    return (sa.or_(allocs.c.source_node_id.is_(None),
                   allocs.c.source_node_id != node_id),
            sa.or_(allocs.c.compute_node_id != node_id,
                   allocs.c.expired_node_id == node_id))


#: relocate's DELETE of the claims of ``b_uuids`` it moves, and its second
#: look, for the same claims.
_RELOCATE = rewrite.deleting(sa.and_(rewrite.of_consumers(),
                                     *_relocatable()))
_RELOCATABLE = rewrite.looking(*_relocatable())


def relocate(engine: sa.Engine, consumer_uuids: list[str],
             host: str, resumable: Collection[str]) -> int:
    """The consumers run on ``host``, not where their claims are: move the
    claims there, confirmed. What nova's conductor does when a build fails
    and it tries an alternate host on its own, without asking a scheduler.

    The usage is already real on ``host``, so no capacity or generation
    check can refuse it; a node over capacity afterwards shows in
    ``allocations audit``. A moving claim's destination is relocated and
    its source kept (nova re-tried a resize on an alternate host); never
    onto the source itself. A claim whose move to this very node expired
    (``expired_*``: a resize reported by finish_resize only after a disk
    copy longer than the TTL) gets that move back instead, destination
    confirmed at its own size and source kept, as if it had not expired:
    the resize's confirm or revert is still to come (on its own node too,
    for a resize on one host) — when it is in ``resumable``; another is
    moved as any claim, its expired move forgotten. Only to a
    host with exactly one compute node (with several, which one is
    unknown). A claim whose move ended while this waited for it is
    relocated too (:func:`~scheduler.claims.rewrite.until_none_missed`).
    :returns: how many claims were relocated.
    """
    if not consumer_uuids:
        return 0
    nodes = models.compute_nodes
    with engine.begin() as conn:
        node_ids = conn.execute(sa.select(nodes.c.id).where(
            nodes.c.host == host, nodes.c.deleted == 0)).scalars().all()
        if len(node_ids) != 1:
            return 0
        [node_id] = node_ids
        params = {"b_node_id": node_id}
        rows = rewrite.until_none_missed(
            conn, consumer_uuids,
            lambda conn, uuids: conn.execute(_RELOCATE, {
                **params, "b_uuids": uuids}).all(),
            _RELOCATABLE, params)
        resumed = [r for r in rows if r.expired_node_id == node_id
                   and r.consumer_uuid in resumable]
        moved = [r for r in rows if r.expired_node_id != node_id
                 or r.consumer_uuid not in resumable]
        usage.give_back(conn, usage.held(moved))
        usage.change_usage(
            conn, [(node_id, r.vcpus, r.memory_mb, r.disk_gb)
                   for r in moved]
            + [(node_id, r.expired_vcpus, r.expired_memory_mb,
                r.expired_disk_gb) for r in resumed], +1)
        rewrite.reinsert(conn, moved, lambda r: {
            "compute_node_id": node_id, "expires_at": None, **_NO_EXPIRED})
        # Resumed: the claim it held is the source again (still counted
        # there), the expired destination the claim.
        rewrite.reinsert(conn, resumed, lambda r: {
            **as_source(r),
            "compute_node_id": node_id, "vcpus": r.expired_vcpus,
            "memory_mb": r.expired_memory_mb, "disk_gb": r.expired_disk_gb,
            "expires_at": None, **_NO_EXPIRED})
    return len(rows)
