"""The claim: a guarded UPDATE of each node's usage, then the allocations.

A claim is one transaction: for every node it touches, bump the node's usage
with ``UPDATE ... WHERE id = :id AND generation = :seen`` (generation + 1),
then insert one allocation row per consumer. If any UPDATE matches no row,
another writer changed that node since we read it: the whole transaction
rolls back and :class:`~scheduler.hosts.planned.ClaimConflict` names the
node, so the caller re-reads and plans again. A consumer already holding an
allocation makes the insert violate the unique ``consumer_uuid`` and the
transaction rolls back too, so a consumer never holds two claims.

The same UPDATE keeps each node within the limit the planner enforced
(:func:`scheduler.hosts.capacity.within_sql`); a server group's rule is
kept by :mod:`scheduler.claims.groups`, a move's source by
:mod:`scheduler.claims.moves`.
"""
from __future__ import annotations

import collections
from typing import Iterable
from typing import NoReturn

import sqlalchemy as sa

from scheduler.claims import moves
from scheduler.claims import refusals
from scheduler.claims import rewrite
from scheduler.claims import usage
from scheduler.claims.groups import check_group
from scheduler.claims.groups import GroupRule
from scheduler.claims.groups import lock_group
from scheduler.db import clock
from scheduler.db import compiled
from scheduler.db import models
from scheduler.hosts import capacity
from scheduler.hosts.capacity import Ratios
from scheduler.hosts.planned import Claim


def claim(engine: sa.Engine, claims: list[Claim], *,
          group: GroupRule | None = None, replace: Iterable[str] = (),
          move: Iterable[str] = (), ttl: int = 0,
          default_ratios: Ratios = Ratios(),
          moving_from: dict[str, tuple[int, int | None]] | None = None,
          confirm_on_arrival: bool = False) -> None:
    """Record ``claims`` all together or not at all.

    Besides the generation, each node's UPDATE checks that the new usage
    stays within the limit the planner enforced (``Claim.limits``), or
    where it enforced none, capacity × the node's ratio (else
    ``default_ratios``) — :func:`scheduler.hosts.capacity.within_sql`, the
    rule the filters apply: whatever a planner believed, the database never
    holds a node over the limit it was planned against.

    ``replace`` names consumers whose existing claims this one supersedes
    (released in the same transaction, first: what they held is room for
    the new claims). ``move`` names consumers being
    moved: their current claim becomes the new claim's source, kept until
    :func:`~scheduler.claims.moves.confirm_move` or
    :func:`~scheduler.claims.moves.revert_move` (a consumer already moving
    gives back its old destination and keeps its first source). ``ttl`` > 0
    makes the claims expire that many seconds from now unless confirmed; an
    expired move is reverted, not released. ``moving_from`` gives, per
    moving consumer, the ``(compute_node_id, source_node_id)`` of the claim
    the move was planned against: if the consumer holds another by now (a
    concurrent duplicate of the request moved it first), ConsumerExists.
    ``confirm_on_arrival`` records with the moves that they have no confirm
    step (``request.moves.confirmed_on_arrival``): the consumer reported on its
    destination confirms its move (``scheduler.nova.casts``).
    A group's member counts on both sides of its move in flight: a revert
    puts it back on its source.
    :raises ClaimConflict: a node's generation moved; nothing was written.
    :raises NoRoom: a node would exceed its capacity; nothing was written.
    :raises GroupConflict: the claims would break ``group``; nothing was
        written.
    :raises ConsumerExists: a consumer already has an allocation, or a
        moving one not the one in ``moving_from``; nothing was written.
    """
    with engine.begin() as conn:
        claim_in(conn, claims, groups=[group] if group else [],
                 replace=replace, move=move, ttl=ttl,
                 default_ratios=default_ratios, moving_from=moving_from,
                 confirm_on_arrival=confirm_on_arrival)


def claim_in(conn: sa.Connection, claims: list[Claim], *,
             groups: Iterable[GroupRule] = (), replace: Iterable[str] = (),
             move: Iterable[str] = (), ttl: int = 0,
             default_ratios: Ratios = Ratios(),
             moving_from: dict[str, tuple[int, int | None]] | None = None,
             confirm_on_arrival: bool = False) -> None:
    """:func:`claim`'s writes inside the caller's transaction ``conn``, for
    callers that record more in the same transaction (a stack's row). Every
    group in ``groups`` is kept; a claim counts towards the group named by
    its ``group_uuid``. Raises as :func:`claim`; on any error the caller
    must roll back (on PostgreSQL a duplicate key has already aborted the
    transaction).
    """
    with refusals.consumer_key():
        _claim_in(conn, claims, groups, list(replace), list(move), ttl,
                  default_ratios, moving_from or {}, confirm_on_arrival)


#: Dialects where :func:`claim_alone` makes a claim in one statement (a
#: data-modifying WITH; SQLite and MariaDB have none).
ONE_STATEMENT = frozenset({"postgresql"})


def claim_alone(conn: sa.Connection, claim: Claim, *, ttl: int = 0,
                default_ratios: Ratios = Ratios()) -> None:
    """:func:`claim` of one plain claim (one instance, no group, nothing
    replaced or moved) as one statement, on ``conn`` in autocommit, on a
    dialect in :data:`ONE_STATEMENT`: the node's guarded UPDATE, and the
    allocation's INSERT of the row it returned.

    A transaction is four round trips to PostgreSQL (BEGIN, UPDATE,
    INSERT, COMMIT) and holds the node's and the change counter's row
    locks across three of them; this is one, holding them for the
    statement alone. The outcome is the transaction's: a node that moved
    or has no room returns no row, so nothing is inserted (the node is
    then read to say which of the two), and a consumer already placed
    fails the statement whole.
    :raises: as :func:`claim` (no GroupConflict: no group).
    """
    params = _consume_params([claim], default_ratios, [])
    if _beyond_columns(params):
        _raise_refusal(conn, [claim], params, default_ratios, [])
    params.update({f"a_{name}": getattr(claim, name)
                   for name in _ALONE_COLUMNS})
    if ttl > 0:
        params["b_ttl"] = ttl
    with refusals.consumer_key():
        inserted = _CLAIM_ALONE[ttl > 0].execute(conn, params).rowcount
    if inserted != 1:
        _raise_refusal(conn, [claim], params, default_ratios, [])


#: The allocation columns a plain claim sets from the Claim.
_ALONE_COLUMNS = ("consumer_uuid", "project_id", "user_id", "group_uuid",
                  "vcpus", "memory_mb", "disk_gb")


def _claim_alone_statement(expiring: bool) -> sa.Insert:
    a = models.allocations
    claimed = _CONSUME_EXPRESSION.returning(
        models.compute_nodes.c.id).cte("claimed")
    # Bind names of their own: an UPDATE takes a bind named like one of its
    # table's columns (vcpus, memory_mb) for a value to SET.
    values = {name: sa.bindparam(f"a_{name}", type_=a.c[name].type)
              for name in _ALONE_COLUMNS}
    values["compute_node_id"] = claimed.c.id
    if expiring:
        values["expires_at"] = clock.utcnow_plus(
            sa.bindparam("b_ttl", type_=sa.Integer))
    return a.insert().from_select(list(values), sa.select(*values.values()))


def _claim_in(conn: sa.Connection, claims: list[Claim],
              groups: Iterable[GroupRule], replace: list[str],
              move: list[str], ttl: int, default_ratios: Ratios,
              moving_from: dict[str, tuple],
              confirm_on_arrival: bool = False) -> None:
    # Sorted: two transactions lock the same groups in the same order.
    groups = sorted(groups, key=lambda g: g.uuid)
    for group in groups:
        lock_group(conn, group)
    # The replaced claims go first: what they held is room for the new
    # ones (a re-sent request on a full node takes its own place again),
    # netted into the same generation-checked UPDATE; what they held on
    # other nodes is given back after the claims' checks.
    freed = (usage.freed_by(rewrite.delete_consumers(conn, replace))
             if replace else [])
    node_ids = {c.node_id for c in claims}
    if len(node_ids | {u[0] for u in freed}) > 1:
        lock_nodes(conn, node_ids | {u[0] for u in freed})
    _consume(conn, claims, default_ratios, freed)
    usage.give_back(conn, [u for u in freed if u[0] not in node_ids])
    sources = moves.start_moves(conn, move, moving_from) if move else {}
    for group in groups:
        check_group(conn, group, claims)
    # A provisional claim's deadline is computed by the INSERT itself
    # (the database's clock, as before), not read in a round trip first.
    ttl_params = {"b_ttl": ttl} if ttl > 0 else {"i_expires_at": None}
    rows = []
    for c in claims:
        row = {"i_consumer_uuid": c.consumer_uuid,
               "i_compute_node_id": c.node_id, "i_project_id": c.project_id,
               "i_user_id": c.user_id, "i_group_uuid": c.group_uuid,
               "i_vcpus": c.vcpus, "i_memory_mb": c.memory_mb,
               "i_disk_gb": c.disk_gb, **ttl_params,
               "i_confirm_on_arrival": (confirm_on_arrival
                                        and c.consumer_uuid in sources)}
        source = sources.get(c.consumer_uuid, moves.NO_SOURCE)
        for name, value in source.items():
            row[f"i_{name}"] = value
        rows.append(row)
    if rows:
        _INSERT[ttl > 0].execute(conn, rows[0] if len(rows) == 1 else rows)


def lock_nodes(conn: sa.Connection, node_ids: Iterable[int]) -> None:
    """Lock the rows of ``node_ids`` for this transaction, in id order, in
    one statement (PostgreSQL and MySQL/MariaDB; SQLite has one writer).

    Every UPDATE of a node also updates the one ``change_counter`` row
    (migration 0003's trigger), so a writer locks its node, then the
    counter. A transaction that goes on to lock a second node while
    holding the counter waits for that node's writer, which waits for the
    counter: a deadlock. Locking every node it will write first, then
    writing, keeps the order "nodes, then the counter" for everyone.
    """
    if conn.dialect.name == "sqlite":
        return
    n = models.compute_nodes
    conn.execute(sa.select(n.c.id).where(n.c.id.in_(sorted(node_ids)))
                 .order_by(n.c.id).with_for_update()).all()


def _consume_statement() -> sa.Update:
    # A claim's: only at the generation it was planned against, and only
    # within the limits (capacity.within_sql).
    n = models.compute_nodes
    return usage.usage_update(
        n.c.generation == sa.bindparam("b_seen"), n.c.deleted == 0,
        *(_within(resource, n) for resource in capacity.RESOURCES))


#: resource -> the name its claim's parameters are bound by.
_BIND = {capacity.VCPU: "vcpus", capacity.MEMORY: "memory",
         capacity.DISK: "disk"}


def _within(resource: capacity.Resource, n: sa.Table):
    bind = _BIND[resource]
    # BIGINT: on PostgreSQL ``used + amount`` of two INTEGERs beyond the
    # type's range is an error ("integer out of range"), not a claim that
    # does not fit.
    return capacity.within_sql(
        resource, sa.cast(n.c[resource.node_used], sa.BigInteger),
        sa.bindparam(f"b_{bind}"), n.c[resource.node_total],
        n.c[resource.ratio], sa.bindparam(f"b_{bind}_ratio", type_=sa.Float),
        sa.bindparam(f"b_{bind}_limit", type_=sa.Float))


_CONSUME_EXPRESSION = _consume_statement()
#: Run on every claim: compiled once (db.compiled).
_CONSUME = compiled.Compiled(_CONSUME_EXPRESSION)
#: claim_alone's statement, by whether the claim expires.
_CLAIM_ALONE = {expiring: compiled.Compiled(
    _claim_alone_statement(expiring)) for expiring in (False, True)}


def _consume(conn: sa.Connection, claims: list[Claim], ratios: Ratios,
             freed: list[usage.Usage]) -> None:
    """Add ``claims`` to their nodes' usage, less what ``freed`` (replaced
    claims, already deleted) held on the same nodes.

    :raises NoRoom, ClaimConflict: as :func:`claim`.
    """
    by_node: dict[int, list[Claim]] = collections.defaultdict(list)
    for c in claims:
        by_node[c.node_id].append(c)
    # Sorted so two transactions lock nodes in the same order (no deadlock
    # between them on PostgreSQL or MySQL).
    for node_id in sorted(by_node):
        group = by_node[node_id]
        here = [u for u in freed if u[0] == node_id]
        params = _consume_params(group, ratios, here)
        if (_beyond_columns(params)
                or _CONSUME.execute(conn, params).rowcount != 1):
            _raise_refusal(conn, group, params, ratios, here)


def _beyond_columns(params: dict) -> bool:
    """Whether the claims add more of a resource to their node than its
    usage column holds: sizes each within the request schema's range add
    up (instances, disk's root + ephemeral + swap). Such a claim is
    refused before the UPDATE runs: PostgreSQL's prepared statement types
    its parameters as the columns and would fail as a database error."""
    return any(params[f"b_{bind}"] > refusals.MAX_USAGE
               for bind in _BIND.values())


def _consume_params(group: list[Claim], ratios: Ratios,
                    freed: list[usage.Usage]) -> dict:
    """:data:`_CONSUME`'s parameters for the claims ``group`` on one node,
    where the replaced claims ``freed`` held what they give back."""
    params = {"b_node_id": group[0].node_id, "b_seen": group[0].generation,
              "b_count": len(group) - len(freed)}
    for resource, amount in _amounts(group, freed).items():
        bind = _BIND[resource]
        params[f"b_{bind}"] = amount
        params[f"b_{bind}_ratio"] = ratios.of(resource)
        # Several instances on one node: the tightest limit planned.
        planned = [c.limits[resource.name] for c in group
                   if resource.name in c.limits]
        params[f"b_{bind}_limit"] = min(planned) if planned else None
    return params


def _amounts(group: list[Claim],
             freed: list[usage.Usage]) -> dict[capacity.Resource, int]:
    """What ``group`` adds to its node, net of the ``freed`` usages."""
    return {capacity.VCPU: sum(c.vcpus for c in group)
            - sum(u[1] for u in freed),
            capacity.MEMORY: sum(c.memory_mb for c in group)
            - sum(u[2] for u in freed),
            capacity.DISK: sum(c.disk_gb for c in group)
            - sum(u[3] for u in freed)}


def _raise_refusal(conn: sa.Connection, group: list[Claim], params: dict,
                   ratios: Ratios, freed: list[usage.Usage]) -> NoReturn:
    """The node's UPDATE for the claims ``group`` (bound by ``params``)
    matched no row: :func:`scheduler.claims.refusals.raise_refusal`."""
    refusals.raise_refusal(
        conn, group, _amounts(group, freed),
        {resource: params[f"b_{bind}_limit"]
         for resource, bind in _BIND.items()}, ratios)


def _insert_statement(expiring: bool) -> compiled.Compiled:
    """A claim's INSERT: every column of :data:`_INSERT_COLUMNS` from the
    bind of its name prefixed ``i_`` (an INSERT keeps the bare names for
    itself), ``expires_at`` computed from ``b_ttl`` when ``expiring``."""
    a = models.allocations
    values = {name: sa.bindparam(f"i_{name}", type_=a.c[name].type)
              for name in _INSERT_COLUMNS}
    if expiring:
        values["expires_at"] = clock.utcnow_plus(
            sa.bindparam("b_ttl", type_=sa.Integer))
    return compiled.Compiled(a.insert().values(values))


_INSERT_COLUMNS = ("consumer_uuid", "compute_node_id", "project_id",
                   "user_id", "group_uuid", "vcpus", "memory_mb", "disk_gb",
                   "expires_at", "confirm_on_arrival") + moves.SOURCE_COLUMNS
#: A claim's INSERT, by whether the claim expires.
_INSERT = {expiring: _insert_statement(expiring)
           for expiring in (False, True)}
