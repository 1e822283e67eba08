"""A stack's consumers taken over by nova's instances (``stack_instances``).

A stack holds its claims under consumer uuids derived from its id. Nova
boots each of the stack's servers under an instance uuid of its own; the
boot's claim is then the stack's: :func:`take_over` moves it to the
instance in one transaction, and records which instance took which
consumer so that it happens once. What a stack holds is then what its
consumers hold, each under the uuid now holding it (:func:`holders`).
"""
from __future__ import annotations

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.claims import groups
from scheduler.claims.groups import GroupRule
from scheduler.claims.refusals import GroupConflict
from scheduler.db import clock
from scheduler.db import models
from scheduler.hosts.planned import Claim


def holders(conn: sa.Connection, stack_id: str) -> dict[str, str]:
    """The stack's consumers taken over: consumer uuid -> instance uuid."""
    t = models.stack_instances
    return dict(conn.execute(sa.select(t.c.consumer_uuid, t.c.instance_uuid)
                             .where(t.c.stack_id == stack_id)).all())


def any_taken(engine: sa.Engine, stack_id: str) -> bool:
    """Whether nova's instances took over any of the stack's consumers."""
    t = models.stack_instances
    with engine.connect() as conn:
        return conn.execute(sa.select(t.c.consumer_uuid).where(
            t.c.stack_id == stack_id).limit(1)).first() is not None


def take_over(engine: sa.Engine, stack_id: str, consumer_uuid: str,
              instance_uuid: str, *, group: GroupRule | None = None,
              project_id: str | None = None, user_id: str | None = None,
              ttl: int = 0) -> bool:
    """Move the claim of the stack's ``consumer_uuid`` to nova's
    ``instance_uuid``, in one transaction, with its deadline restarted
    (``ttl``; a confirmed claim stays confirmed) and the boot's project
    and user, and remember it.

    ``group``: the hard server group nova's boot names (Heat's real group,
    where the stack planned with a group derived from its id): the claim
    joins it, under its rule.
    :returns: whether the claim was taken over; False, with nothing
        written, when the stack is not placed (released), the consumer
        holds no claim (expired, released,
        taken over by another instance), the instance holds one already,
        or joining ``group`` would break its rule.
    """
    allocs = models.allocations
    nodes = models.compute_nodes
    t = models.stack_instances
    stacks = models.stacks
    try:
        with engine.begin() as conn:
            # The stack's row first, locked, as a placement of the stack
            # locks it (stacks.store.claim): one that planned before this
            # take-over sees it and plans again (a released stack has no
            # row: nothing to take over).
            if conn.execute(stacks.update()
                            .where(stacks.c.stack_id == stack_id)
                            .values(stack_id=stacks.c.stack_id)
                            ).rowcount != 1:
                raise _NotTaken
            # Of two instances taking over one consumer, the second waits
            # here and fails on the key.
            conn.execute(t.insert().values(
                consumer_uuid=consumer_uuid, stack_id=stack_id,
                instance_uuid=instance_uuid))
            held = conn.execute(
                sa.select(allocs.c.id, allocs.c.compute_node_id, nodes.c.host,
                          allocs.c.vcpus, allocs.c.memory_mb,
                          allocs.c.disk_gb)
                .select_from(allocs.join(
                    nodes, nodes.c.id == allocs.c.compute_node_id))
                .where(allocs.c.consumer_uuid == consumer_uuid)).first()
            if held is None:
                raise _NotTaken
            values: dict = {"consumer_uuid": instance_uuid,
                            "project_id": project_id, "user_id": user_id}
            if group is not None:
                # As any claim of a hard group: serialized with the group's
                # others, then held to its rule.
                groups.lock_group(conn, group)
                groups.check_group(conn, group, [Claim(
                    instance_uuid, held.compute_node_id, held.host, 0,
                    held.vcpus, held.memory_mb, held.disk_gb,
                    group_uuid=group.uuid)])
                values["group_uuid"] = group.uuid
            if ttl > 0:
                values["expires_at"] = sa.case(
                    (allocs.c.expires_at.is_(None), None),
                    else_=clock.utcnow_plus(
                        sa.bindparam("b_ttl", ttl, type_=sa.Integer)))
            conn.execute(allocs.update().where(allocs.c.id == held.id)
                         .values(values))
    except (_NotTaken, GroupConflict, db_exc.DBDuplicateEntry):
        return False
    return True


class _NotTaken(Exception):
    """The stack is not placed or the consumer holds no claim: roll the
    record back."""
