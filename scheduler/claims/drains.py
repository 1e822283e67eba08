"""A drain's records, and the one transaction that applies it.

A drain moves every instance off a host (``scheduler.drain``). Applied, it
is one transaction (:func:`apply`): every move claimed as a move confirmed
on arrival (``consume.claim_in``: the same generation, capacity and
server-group checks as any claim), the drain's rows, and the host's compute
service disabled with the reason :data:`DRAINING`. Either the host is
draining with all its moves claimed, or nothing changed.

Nova then moves each instance with its own scheduler request, which gets
the planned claim back (``request.moves``: a request for the host its
consumer already holds is a re-send); :func:`begin` marks such a move
begun. :func:`cancel` reverts the moves not begun and ends the drain.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.claims import moves
from scheduler.claims.groups import GroupRule
from scheduler.claims.refusals import ConsumerExists
from scheduler.db import compute
from scheduler.db import models
from scheduler.hosts.capacity import Ratios
from scheduler.hosts.planned import Claim

#: The disabled reason of a host a drain disabled (and the only one
#: :func:`cancel` enables again).
DRAINING = "draining"


def stored(engine: sa.Engine, host: str) -> dict[str, Any] | None:
    """The drain applied to ``host``: ``{"same_aggregate", "moves"}`` as
    it was applied, or None."""
    t = models.drains
    with engine.connect() as conn:
        row = conn.execute(sa.select(t.c.same_aggregate, t.c.definition)
                           .where(t.c.host == host)).first()
    if row is None:
        return None
    return {"same_aggregate": bool(row.same_aggregate),
            "moves": json.loads(row.definition)}


def apply(engine: sa.Engine, host: str, same_aggregate: bool,
          planned: list[dict[str, Any]], to_claim: list[Claim], *,
          groups: Iterable[GroupRule] = (),
          moving_from: dict[str, tuple[int, int | None]],
          default_ratios: Ratios = Ratios()) -> None:
    """Claim every move of the drain of ``host`` and record it, or
    nothing: the moves (``to_claim``, one per consumer of
    ``moving_from``, which gives the claim each was planned against) as
    moves confirmed on arrival, kept until cancelled; ``planned`` (the
    plan's moves, as returned) stored for a re-send; the host's compute
    service disabled with the reason :data:`DRAINING`.

    :raises ClaimConflict, NoRoom, GroupConflict: as consume.claim;
        nothing was written.
    :raises ConsumerExists: the host was drained concurrently, or a
        consumer's claim changed since it was planned; nothing was
        written.
    """
    with engine.begin() as conn:
        try:
            # First: a concurrent drain of the host waits here and fails
            # on the key instead of claiming beside this one.
            conn.execute(models.drains.insert().values(
                host=host, same_aggregate=same_aggregate,
                definition=json.dumps(planned, sort_keys=True)))
        except db_exc.DBDuplicateEntry as e:
            raise ConsumerExists(f"host {host} was drained concurrently"
                                 ) from e
        if moving_from:
            conn.execute(models.drain_moves.insert(), [
                {"consumer_uuid": u, "host": host} for u in moving_from])
        consume.claim_in(conn, to_claim, groups=groups,
                         move=list(moving_from), moving_from=moving_from,
                         confirm_on_arrival=True,
                         default_ratios=default_ratios)
        compute.set_service_disabled(conn, host, True, DRAINING)


def begin(engine: sa.Engine, consumer_uuids: list[str]) -> int:
    """The scheduler request of these consumers' drain moves was answered:
    nova is moving them, :func:`cancel` leaves them be.
    :returns: how many drain moves began now."""
    t = models.drain_moves
    with engine.begin() as conn:
        return conn.execute(t.update().where(
            t.c.consumer_uuid.in_(consumer_uuids), t.c.begun == sa.false())
            .values(begun=True)).rowcount


def cancel(engine: sa.Engine, host: str) -> int:
    """End the drain of ``host``: revert its moves not begun and still
    moving from the host (their destinations are given back, the host
    holds them again), forget the drain, and enable the host's compute
    service if the drain disabled it. Moves begun or over stay as they
    are. Idempotent: a host not draining changes nothing.
    :returns: how many moves were reverted."""
    d, dm = models.drains, models.drain_moves
    a, n = models.allocations, models.compute_nodes
    with engine.begin() as conn:
        # DELETE ... RETURNING: of two concurrent cancels one gets it.
        if conn.execute(d.delete().where(d.c.host == host)
                        .returning(d.c.host)).first() is None:
            return 0
        waiting = conn.execute(
            sa.select(dm.c.consumer_uuid)
            .join(a, a.c.consumer_uuid == dm.c.consumer_uuid)
            .join(n, n.c.id == a.c.source_node_id)
            .where(dm.c.host == host, dm.c.begun == sa.false(),
                   n.c.host == host)).scalars().all()
        conn.execute(dm.delete().where(dm.c.host == host))
        reverted = moves.revert_in(conn, sorted(waiting))
        compute.set_service_disabled(conn, host, False,
                                     only_reason=DRAINING)
    return reverted
