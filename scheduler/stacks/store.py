"""The ``stacks`` table, and the one transaction that claims a stack.

A stack's row and every claim of the stack are written in one transaction
(consume.claim_in: the same generation, capacity and server-group checks as
a single request), so either the stack holds all its claims or none. The
row is written first: a concurrent send of the same stack then waits on it
(and fails on its primary key) instead of claiming beside it.
"""
from __future__ import annotations

from typing import Iterable

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.claims import lifecycle
from scheduler.claims.groups import GroupRule
from scheduler.claims.refusals import ConsumerExists
from scheduler.hosts.capacity import Ratios
from scheduler.hosts.planned import Claim
from scheduler.db import models
from scheduler.stacks import instances
from scheduler.stacks.definition import consumers_of
from scheduler.stacks.stack import Stack


def definition(engine: sa.Engine, stack_id: str) -> str | None:
    """The stored definition of stack ``stack_id``, or None."""
    t = models.stacks
    with engine.connect() as conn:
        return conn.execute(sa.select(t.c.definition)
                            .where(t.c.stack_id == stack_id)).scalar()


def owners(engine: sa.Engine, stack_id: str,
           consumer_uuids: Iterable[str]) -> dict[str, str]:
    """Which of ``consumer_uuids`` are instances of a stack other than
    ``stack_id``: uuid -> that stack's id (the first found).

    Only stacks whose definition holds the uuid are read, a hundred uuids
    to a query; call it for the few consumers another stack may name (the
    ones a spec gives), not every derived one.
    """
    wanted = sorted(set(consumer_uuids))
    found: dict[str, str] = {}
    t = models.stacks
    with engine.connect() as conn:
        for start in range(0, len(wanted), 100):
            chunk = wanted[start:start + 100]
            # A uuid is hex and dashes: no LIKE wildcard to escape. The
            # definition may name it elsewhere (a hint): consumers_of says.
            rows = conn.execute(sa.select(t.c.stack_id, t.c.definition).where(
                t.c.stack_id != stack_id,
                sa.or_(*(t.c.definition.contains(f'"{u}"') for u in chunk))))
            for row in rows:
                for u in set(chunk).intersection(consumers_of(row.definition)):
                    found.setdefault(u, row.stack_id)
    return found


def claim(engine: sa.Engine, stack: Stack, to_claim: list[Claim], *,
          known: bool, groups: Iterable[GroupRule] = (),
          replace: Iterable[str] = (), ttl: int = 0,
          default_ratios: Ratios = Ratios()) -> None:
    """Record ``stack`` (new unless ``known``: its identical row is
    expected) and all of ``to_claim``, or nothing.

    :raises ClaimConflict, NoRoom, GroupConflict: as consume.claim.
    :raises ConsumerExists: a consumer already holds a claim, the
        stack's row appeared, changed or went since it was read, or nova
        took over one of its claims since; nothing was written.
    """
    t = models.stacks
    with engine.begin() as conn:
        if known:
            # Touch (and lock) the row: it must still be this stack.
            found = conn.execute(
                t.update().where(t.c.stack_id == stack.stack_id,
                                 t.c.definition == stack.definition)
                .values(definition=stack.definition)).rowcount
            if found != 1:
                raise ConsumerExists(
                    f"stack {stack.stack_id} changed concurrently")
            # Planned while none of its servers was nova's: one taken over
            # since (stacks.instances.take_over locks this row too) would
            # be claimed again beside its instance.
            if instances.holders(conn, stack.stack_id):
                raise ConsumerExists(
                    f"stack {stack.stack_id}: nova booted its servers "
                    f"concurrently")
        else:
            try:
                conn.execute(t.insert().values(
                    stack_id=stack.stack_id, project_id=stack.project_id,
                    user_id=stack.user_id, definition=stack.definition))
            except db_exc.DBDuplicateEntry as e:
                # A concurrent request stored the stack first.
                raise ConsumerExists(str(e)) from e
        consume.claim_in(conn, to_claim, groups=groups, replace=replace,
                         ttl=ttl, default_ratios=default_ratios)


def release(engine: sa.Engine, stack_id: str) -> int:
    """Forget stack ``stack_id`` and release every claim it holds, in one
    transaction; an unknown or released stack is not an error.

    The stack's claims are the claims its consumers hold: the consumer
    uuids of its stored definition (or nova's instances that took them
    over, :mod:`scheduler.stacks.instances`), whichever request made each
    claim.
    The schema records membership no other way (an allocation names its
    consumer, not the request that claimed it; the ``stacks`` row names
    the uuids), so a claim another request made for one of those uuids,
    after the stack's own was released, is released too. That is also how
    a stack's server re-claimed alone looks (nova's unshelve claims the
    same instance uuid again), which must go with its stack.
    :returns: the number of claims released.
    """
    t = models.stacks
    with engine.begin() as conn:
        # DELETE ... RETURNING: of two concurrent releases one gets the row.
        row = conn.execute(t.delete().where(t.c.stack_id == stack_id)
                           .returning(t.c.definition)).first()
        if row is None:
            return 0
        taken = instances.holders(conn, stack_id)
        it = models.stack_instances
        conn.execute(it.delete().where(it.c.stack_id == stack_id))
        return lifecycle.release_in(conn, [
            taken.get(u, u) for u in consumers_of(row.definition)])
