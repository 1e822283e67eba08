"""A claim's life: provisional, confirmed, renewed, released or expired.

Claims start provisional when ``ttl`` is given: they expire at the
database's ``now + ttl`` unless :func:`confirm` is called, and
:func:`expire` (a periodic task) gives expired ones back. The database's
clock, not a worker's, decides. :func:`release` gives a claim back once,
both sides of a move in flight.
"""
from __future__ import annotations

import sqlalchemy as sa

from scheduler.claims import moves
from scheduler.claims import rewrite
from scheduler.claims import usage
from scheduler.db import clock
from scheduler.db import models


def release(engine: sa.Engine, consumer_uuids: list[str]) -> int:
    """Delete the consumers' allocations and give their usage back, once
    (both sides of a move in flight).

    Releasing an unknown or already released consumer is not an error.
    :returns: the number of allocations released.
    """
    if not consumer_uuids:
        return 0
    with engine.begin() as conn:
        return release_in(conn, consumer_uuids)


def release_in(conn: sa.Connection, consumer_uuids: list[str]) -> int:
    """:func:`release` inside the caller's transaction ``conn`` (both
    sides of a move in flight). A release that waited for a move's end
    still releases the claim
    (:func:`~scheduler.claims.rewrite.until_none_missed`)."""
    rows = rewrite.until_none_missed(conn, consumer_uuids,
                                     rewrite.delete_consumers)
    usage.give_back(conn, usage.freed_by(rows))
    return len(rows)


def confirm(engine: sa.Engine, consumer_uuids: list[str],
            host: str | None = None) -> int:
    """Make the consumers' claims permanent (until released).

    With ``host``, only a claim still as a nova cast read it before
    deciding to confirm (its instance seen on ``host``): on a live node
    of ``host``, with a confirm step. A claim a concurrent request moved
    since (a live migration's provisional destination on another host)
    is not the one the cast is about, and stays as it is.
    :returns: how many of them hold a claim (confirmed now or before).
    """
    if not consumer_uuids:
        return 0
    allocs = models.allocations
    where = [allocs.c.consumer_uuid.in_(consumer_uuids)]
    if host is not None:
        nodes = models.compute_nodes
        where += [allocs.c.compute_node_id.in_(
                      sa.select(nodes.c.id).where(nodes.c.host == host,
                                                  nodes.c.deleted == 0)),
                  allocs.c.confirm_on_arrival == sa.false()]
    with engine.begin() as conn:
        return conn.execute(
            allocs.update().where(*where).values(expires_at=None)).rowcount


def renew(engine: sa.Engine, consumer_uuids: list[str], ttl: int) -> int:
    """Restart the deadline of the consumers' provisional claims at the
    database's now + ``ttl``, as their INSERT set it: a re-sent request
    answered with them hands them out again, and the caller has the whole
    TTL from that answer to build. Confirmed claims stay permanent; with
    ``ttl`` 0 nothing changes.
    :returns: how many claims were renewed.
    """
    if ttl <= 0 or not consumer_uuids:
        return 0
    allocs = models.allocations
    with engine.begin() as conn:
        return conn.execute(
            allocs.update().where(allocs.c.consumer_uuid.in_(consumer_uuids),
                                  allocs.c.expires_at.is_not(None))
            .values(expires_at=clock.utcnow_plus(
                sa.bindparam("b_ttl", ttl, type_=sa.Integer)))).rowcount


def expire(engine: sa.Engine) -> int:
    """Release every provisional claim whose time has passed (by the
    database's clock); an expired move is reverted instead, so its source
    is kept (and one waiting for its confirm remembers its destination,
    see :func:`scheduler.claims.moves.relocate`). Safe to run in many
    workers at once.
    :returns: the number of claims released or reverted.
    """
    allocs = models.allocations
    expired = sa.and_(allocs.c.expires_at.is_not(None),
                      allocs.c.expires_at < clock.utcnow())
    with engine.begin() as conn:
        reverted = moves.revert(
            conn, rewrite.delete(conn, sa.and_(expired, moves.IS_MOVING)),
            expired=True)
        rows = rewrite.delete(conn, expired)
        usage.give_back(conn, usage.held(rows))
    return reverted + len(rows)
