"""How a claim changes: its row is deleted and inserted again, changed.

``DELETE ... RETURNING`` hands each row to exactly one writer, so what it
held is given back once. Then the writer inserts the row again as it is
to be (:func:`reinsert`): confirmed, moved, reverted. A writer that waited
for another's row can find it gone and its successor invisible to its
snapshot; :func:`until_none_missed` looks again for those.
"""
from __future__ import annotations

from typing import Callable

import sqlalchemy as sa

from scheduler.db import models


def deleting(where) -> sa.Delete:
    """The DELETE of the claims ``where`` selects, returning their rows."""
    # DELETE ... RETURNING: a row is gone for any concurrent deleter, so its
    # usage is given back exactly once.
    allocs = models.allocations
    return allocs.delete().where(where).returning(*allocs.c)


def delete(conn: sa.Connection, where) -> list[sa.Row]:
    """Delete the claims ``where`` selects: the rows deleted."""
    return conn.execute(deleting(where)).all()


def of_consumers() -> sa.ColumnElement[bool]:
    """The claims of the consumers ``b_uuids`` (a list)."""
    return models.allocations.c.consumer_uuid.in_(
        sa.bindparam("b_uuids", expanding=True))


# Built once, as the claim's UPDATE (claims.consume): building the
# expression per call cost more than running it (a release is a delete of
# its consumers, then a usage change).
_DELETE_CONSUMERS = deleting(of_consumers())


def delete_consumers(conn: sa.Connection,
                     consumer_uuids: list[str]) -> list[sa.Row]:
    """:func:`delete` of the allocations of ``consumer_uuids``."""
    return conn.execute(_DELETE_CONSUMERS,
                        {"b_uuids": list(consumer_uuids)}).all()


def reinsert(conn: sa.Connection, rows: list[sa.Row],
             change: Callable[[sa.Row], dict]) -> None:
    """Insert rows deleted by :func:`delete` again, with ``change(row)``
    applied (the consumer keeps its uuid, project, group and age)."""
    if rows:
        columns = [c.name for c in models.allocations.c if c.name != "id"]
        conn.execute(models.allocations.insert(), [
            {**{c: getattr(r, c) for c in columns}, **change(r)}
            for r in rows])


def looking(*where) -> sa.Select:
    """A second look of :func:`until_none_missed`: the consumer and the
    row id of the claims of the consumers ``b_uuids`` that match
    ``where``, the condition of the writer that looks."""
    allocs = models.allocations
    return sa.select(allocs.c.consumer_uuid, allocs.c.id).where(
        of_consumers(), *where)


#: Which of ``b_uuids`` hold a claim.
_HELD = looking()


def until_none_missed(conn: sa.Connection, consumer_uuids: list[str],
                      act: Callable[[sa.Connection, list[str]],
                                    list[sa.Row]],
                      look: sa.Select = _HELD,
                      params: dict | None = None) -> list[sa.Row]:
    """``act(conn, uuids)`` for ``consumer_uuids``, and again for those it
    missed while they hold a claim it would act on: every row it returned
    (each with a ``consumer_uuid``; the consumers it acted on).

    ``act`` writes the claims of ``uuids`` that match its condition, and
    ``look`` (:func:`looking`, binds ``params`` besides ``b_uuids``)
    selects the claims that match the same condition, or it would miss
    what ``look`` finds, round after round.

    A move's end (``claims.moves``: confirm_move, revert_move, relocate;
    ``claims.lifecycle.expire``) deletes the consumer's row and
    inserts its new one. On PostgreSQL (READ COMMITTED) a statement that
    waited for such a transaction on the row's lock finds the old row gone
    and cannot see the new one (its snapshot is older): it acts on
    nothing, though the consumer held a claim throughout. So consumers it
    missed are looked for again, each statement a snapshot of its own.

    The loop ends: a round runs only if its look found a claim that no
    earlier look found, and then either acts on its consumer (each
    consumer once) or lost it to yet another transaction's commit (a
    move's end again, inserting a new row). A claim found again that
    ``act`` did not act on (a look that disagrees with ``act``) stops it
    rather than spin.
    """
    done = act(conn, consumer_uuids)
    missed = set(consumer_uuids) - {r.consumer_uuid for r in done}
    seen: set[int] = set()
    while missed:
        held = conn.execute(look, {**(params or {}),
                                   "b_uuids": sorted(missed)}).all()
        if seen.issuperset(r.id for r in held):
            break
        seen.update(r.id for r in held)
        again = act(conn, [r.consumer_uuid for r in held])
        done += again
        missed -= {r.consumer_uuid for r in again}
    return done
