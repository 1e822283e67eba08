"""Why a claim is refused, beyond a plan gone stale.

Every refusal writes nothing: the claim's transaction rolls back whole.
A stale plan is :class:`scheduler.hosts.planned.ClaimConflict` (plan
again); the refusals here say more: the node is as planned but has no room
(:class:`NoRoom`, a subclass: a forced host that is full, or a planner
that disagrees with the claim), a server group's rule would break
(:class:`GroupConflict`), or a consumer holds a claim already
(:class:`ConsumerExists`, see :func:`consumer_key`). A refused UPDATE
says which, and why (:func:`raise_refusal`), by the rule the UPDATE
applied (:mod:`scheduler.hosts.capacity`).
"""
from __future__ import annotations

import contextlib
from typing import Iterator
from typing import NoReturn

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.db import models
from scheduler.hosts import capacity
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict


class NoRoom(ClaimConflict):
    """The node is as the plan saw it, but the claim does not fit its
    capacity × allocation ratio (e.g. a forced host that is full).
    ``refused`` says, per resource that did not fit, what the database
    held: ``{resource: (used, amount, limit)}``."""

    def __init__(self, message: str, node_id: int | None = None,
                 refused: dict | None = None):
        super().__init__(message, node_id)
        self.refused = refused or {}


class GroupConflict(ClaimConflict):
    """Another member of the group was placed concurrently."""


class ConsumerExists(Exception):
    """One of the consumers already holds a claim."""


@contextlib.contextmanager
def consumer_key() -> Iterator[None]:
    """The one place that says what a duplicate key of a claim means: an
    allocation's consumer_uuid is unique, so the consumer is placed
    already (a re-sent request, a concurrent duplicate)."""
    try:
        yield
    except db_exc.DBDuplicateEntry as e:
        raise ConsumerExists(str(e)) from e


#: The most a usage column (INTEGER on every backend) holds.
MAX_USAGE = 2 ** 31 - 1


def raise_refusal(conn: sa.Connection, group: list[Claim],
                  amounts: dict[capacity.Resource, int],
                  planned: dict[capacity.Resource, float | None],
                  ratios: capacity.Ratios) -> NoReturn:
    """The node's UPDATE for the claims ``group`` (adding ``amounts``,
    within the ``planned`` limits) matched no row: raise NoRoom if the
    node is as planned (its capacity refused), else ClaimConflict."""
    nodes = models.compute_nodes
    node_id = group[0].node_id
    row = conn.execute(sa.select(nodes).where(
        nodes.c.id == node_id, nodes.c.deleted == 0)).first()
    if row is not None and row.generation == group[0].generation:
        refused = _refused(row, amounts, planned, ratios)
        raise NoRoom(
            f"compute node {node_id} ({group[0].host}) has no room "
            f"for {len(group)} more instance(s): " + "; ".join(
                f"{name} {used:g} used + {amount:g} > limit "
                f"{lim:g}" for name, (used, amount, lim)
                in refused.items()), node_id, refused)
    raise ClaimConflict(
        f"compute node {node_id} changed concurrently", node_id)


def _refused(row: sa.Row, amounts: dict,
             planned: dict[capacity.Resource, float | None],
             ratios: capacity.Ratios
             ) -> dict[str, tuple[float, float, float]]:
    """The resources of ``row`` the claim did not fit, by the same rule as
    the SQL: name -> (used, amount, limit)."""
    out = {}
    for resource, amount in amounts.items():
        total = getattr(row, resource.node_total)
        lim = planned[resource]
        if lim is None:
            lim = capacity.limit(total, capacity.ratio(
                getattr(row, resource.ratio), ratios.of(resource)))
        used = getattr(row, resource.node_used)
        if used + amount > MAX_USAGE:
            # even where the node's capacity is not judged
            out[resource.name] = (used, amount, min(lim, MAX_USAGE))
        elif (not capacity.unjudged(resource, total)
              and used + amount > lim):
            out[resource.name] = (used, amount, lim)
    return out
