"""Atomic claims, their confirmation, expiry and release, against SQL.

A claim is one transaction: for every node it touches, bump the node's usage
with ``UPDATE ... WHERE id = :id AND generation = :seen`` (generation + 1),
then insert one allocation row per consumer. If any UPDATE matches no row,
another writer changed that node since we read it: the whole transaction
rolls back and :class:`ClaimConflict` names the node, so the caller re-reads
and plans again. A consumer already holding an allocation makes the insert
violate the unique ``consumer_uuid`` and the transaction rolls back too, so a
consumer never holds two claims.

Claims for a server group with a hard policy first update the group's
``claim_groups`` row. That serializes the group's claims (a row lock on
PostgreSQL and MySQL/MariaDB, the single writer on SQLite), so the
membership check that follows, inside the same transaction, sees every
committed member (READ COMMITTED on both servers; see
:func:`scheduler.db.engine.create_engine`): two concurrent boots cannot both
find the group empty.

Claims start provisional when ``ttl`` is given: they expire at the database's
``now + ttl`` unless :func:`confirm` is called, and :func:`expire` (a
periodic task) gives expired ones back. The database's clock, not a worker's,
decides.

Every function here writes first: on SQLite a transaction that starts with a
write waits for the write lock (busy timeout) instead of failing when a read
snapshot turns out to be stale.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
from typing import Callable, Collection, Iterable

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from scheduler.hosts import capacity
from scheduler.hosts.capacity import Ratios
from scheduler.db import clock
from scheduler.db import compiled
from scheduler.db import models


@dataclasses.dataclass(frozen=True)
class Claim:
    consumer_uuid: str
    node_id: int
    host: str
    generation: int      # the node's generation the plan was made against
    vcpus: int
    memory_mb: int
    disk_gb: int
    project_id: str | None = None
    user_id: str | None = None
    group_uuid: str | None = None
    #: The limits the planner enforced on this node (``vcpu``,
    #: ``memory_mb``, ``disk_gb``: total × the ratio it applied); the claim
    #: checks the same. A resource without one (a forced host, a planner
    #: without that filter) is checked against the node's own ratio.
    limits: dict[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class GroupRule:
    """A hard server-group policy the claim must keep."""
    uuid: str
    policy: str                 # "affinity" or "anti-affinity"
    max_per_host: int = 1


class ClaimConflict(Exception):
    """What the plan was based on changed; plan again."""

    def __init__(self, message: str, node_id: int | None = None):
        super().__init__(message)
        self.node_id = node_id


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
    ``default_ratios``) — :func:`scheduler.hosts.capacity.within_sql`, the rule
    the filters apply: whatever a planner believed, the database never
    holds a node over the limit it was planned against.

    ``replace`` names consumers whose existing claims this one supersedes
    (released in the same transaction, first: what they held is room for
    the new claims). ``move`` names consumers being
    moved: their current claim becomes the new claim's source, kept until
    :func:`confirm_move` or :func:`revert_move` (a consumer already moving
    gives back its old destination and keeps its first source). ``ttl`` > 0
    makes the claims expire that many seconds from now unless confirmed; an
    expired move is reverted, not released. ``moving_from`` gives, per
    moving consumer, the ``(compute_node_id, source_node_id)`` of the claim
    the move was planned against: if the consumer holds another by now (a
    concurrent duplicate of the request moved it first), ConsumerExists.
    ``confirm_on_arrival`` records with the moves that they have no confirm
    step (``moves.confirmed_on_arrival``): the consumer reported on its
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
    with _consumer_key():
        _claim_in(conn, claims, groups, list(replace), list(move), ttl,
                  default_ratios, moving_from or {}, confirm_on_arrival)


@contextlib.contextmanager
def _consumer_key():
    """The one place that says what a duplicate key of a claim means: an
    allocation's consumer_uuid is unique, so the consumer is placed
    already (a re-sent request, a concurrent duplicate)."""
    try:
        yield
    except db_exc.DBDuplicateEntry as e:
        raise ConsumerExists(str(e)) from e


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
    with _consumer_key():
        inserted = _CLAIM_ALONE[ttl > 0].execute(conn, params).rowcount
    if inserted != 1:
        _raise_refusal(conn, [claim], params, default_ratios, [])


#: The allocation columns a plain claim sets from the Claim.
_ALONE_COLUMNS = ("consumer_uuid", "project_id", "user_id", "group_uuid",
                  "vcpus", "memory_mb", "disk_gb")


def _claim_alone_statement(expiring: bool) -> sa.Insert:
    a = models.allocations
    claimed = _CONSUME_EXPRESSION.returning(models.compute_nodes.c.id).cte("claimed")
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
        _lock_group(conn, group.uuid)
    # The replaced claims go first: what they held is room for the new
    # ones (a re-sent request on a full node takes its own place again),
    # netted into the same generation-checked UPDATE; what they held on
    # other nodes is given back after the claims' checks.
    freed = freed_by(_delete_consumers(conn, replace)) if replace else []
    node_ids = {c.node_id for c in claims}
    if len(node_ids | {usage[0] for usage in freed}) > 1:
        lock_nodes(conn, node_ids | {usage[0] for usage in freed})
    _consume(conn, claims, default_ratios, freed)
    _give_back(conn, [usage for usage in freed if usage[0] not in node_ids])
    sources = _start_moves(conn, move, moving_from) if move else {}
    for group in groups:
        _check_group(conn, group, claims)
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
        for name, value in sources.get(c.consumer_uuid, _NO_SOURCE).items():
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


def _usage_update(*where) -> sa.Update:
    """The one UPDATE of a node's usage, for claims and releases alike:
    node ``b_node_id`` (if ``where`` holds too) gets ``b_vcpus``,
    ``b_memory``, ``b_disk`` and ``b_count`` instances added (negative:
    given back), its free columns kept in step, its generation bumped and
    its ``updated_at`` set.

    Built once per use, with bind parameters: constructing the expression
    per call cost more than running it.
    """
    n = models.compute_nodes
    return (
        n.update().where(n.c.id == sa.bindparam("b_node_id"), *where)
        .values(vcpus_used=n.c.vcpus_used + sa.bindparam("b_vcpus"),
                memory_mb_used=n.c.memory_mb_used + sa.bindparam("b_memory"),
                local_gb_used=n.c.local_gb_used + sa.bindparam("b_disk"),
                free_ram_mb=n.c.free_ram_mb - sa.bindparam("b_memory"),
                free_disk_gb=n.c.free_disk_gb - sa.bindparam("b_disk"),
                running_vms=n.c.running_vms + sa.bindparam("b_count"),
                generation=n.c.generation + 1,
                # The database's clock, as every other writer here sets
                # it; and the statement then needs no Python-side
                # default, so it can run compiled (db.compiled).
                updated_at=clock.utcnow()))


def _consume_statement() -> sa.Update:
    # A claim's: only at the generation it was planned against, and only
    # within the limits (capacity.within_sql).
    n = models.compute_nodes
    return _usage_update(
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
             freed: list[Usage]) -> None:
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
        here = [usage for usage in freed if usage[0] == node_id]
        params = _consume_params(group, ratios, here)
        if (_beyond_columns(params)
                or _CONSUME.execute(conn, params).rowcount != 1):
            _raise_refusal(conn, group, params, ratios, here)


#: The most a usage column (INTEGER on every backend) holds.
MAX_USAGE = 2 ** 31 - 1


def _beyond_columns(params: dict) -> bool:
    """Whether the claims add more of a resource to their node than its
    usage column holds: sizes each within the request schema's range add
    up (instances, disk's root + ephemeral + swap). Such a claim is
    refused before the UPDATE runs: PostgreSQL's prepared statement types
    its parameters as the columns and would fail as a database error."""
    return any(params[f"b_{bind}"] > MAX_USAGE
               for bind in _BIND.values())


def _consume_params(group: list[Claim], ratios: Ratios,
                    freed: list[Usage]) -> dict:
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
             freed: list[Usage]) -> dict[capacity.Resource, int]:
    """What ``group`` adds to its node, net of the ``freed`` usages."""
    return {capacity.VCPU: sum(c.vcpus for c in group)
            - sum(u[1] for u in freed),
            capacity.MEMORY: sum(c.memory_mb for c in group)
            - sum(u[2] for u in freed),
            capacity.DISK: sum(c.disk_gb for c in group)
            - sum(u[3] for u in freed)}


def _raise_refusal(conn: sa.Connection, group: list[Claim], params: dict,
                   ratios: Ratios, freed: list[Usage]) -> None:
    """The node's UPDATE for the claims ``group`` matched no row: raise
    NoRoom if the node is as planned (its capacity refused), else
    ClaimConflict."""
    nodes = models.compute_nodes
    node_id = group[0].node_id
    row = conn.execute(sa.select(nodes).where(
        nodes.c.id == node_id, nodes.c.deleted == 0)).first()
    if row is not None and row.generation == group[0].generation:
        refused = _refused(row, _amounts(group, freed), params, ratios)
        raise NoRoom(
            f"compute node {node_id} ({group[0].host}) has no room "
            f"for {len(group)} more instance(s): " + "; ".join(
                f"{name} {used:g} used + {amount:g} > limit "
                f"{lim:g}" for name, (used, amount, lim)
                in refused.items()), node_id, refused)
    raise ClaimConflict(
        f"compute node {node_id} changed concurrently", node_id)


def _refused(row: sa.Row, amounts: dict, params: dict,
             ratios: Ratios) -> dict[str, tuple[float, float, float]]:
    """The resources of ``row`` the claim did not fit, by the same rule as
    the SQL: name -> (used, amount, limit)."""
    out = {}
    for resource, amount in amounts.items():
        total = getattr(row, resource.node_total)
        planned = params[f"b_{_BIND[resource]}_limit"]
        lim = planned if planned is not None else capacity.limit(
            total, capacity.ratio(getattr(row, resource.ratio),
                                  ratios.of(resource)))
        used = getattr(row, resource.node_used)
        if used + amount > MAX_USAGE:
            # even where the node's capacity is not judged
            out[resource.name] = (used, amount, min(lim, MAX_USAGE))
        elif not (resource.zero_unjudged and total == 0) and \
                used + amount > lim:
            out[resource.name] = (used, amount, lim)
    return out


def _lock_group(conn: sa.Connection, group_uuid: str) -> None:
    """Create the group's row or bump it: one write that holds the row's
    lock (PostgreSQL, MySQL) or the write lock (SQLite) to the end of the
    transaction.

    One upsert rather than insert-if-absent then UPDATE: on InnoDB an
    ``INSERT IGNORE`` that finds the row takes a *shared* lock, and two
    claims holding it that both upgrade to exclusive for the UPDATE
    deadlock; ``ON DUPLICATE KEY UPDATE`` takes the exclusive lock at once.
    """
    table = models.claim_groups
    bump = {"generation": table.c.generation + 1}
    dialect = conn.dialect.name
    if dialect == "mysql":
        statement = (mysql.insert(table).values(uuid=group_uuid, generation=1)
                     .on_duplicate_key_update(bump))
    else:
        insert = {"postgresql": postgresql.insert,
                  "sqlite": sqlite.insert}[dialect]
        statement = (insert(table).values(uuid=group_uuid, generation=1)
                     .on_conflict_do_update(index_elements=[table.c.uuid],
                                            set_=bump))
    conn.execute(statement)


def _check_group(conn: sa.Connection, group: GroupRule,
                 claims: list[Claim]) -> None:
    members = group_hosts(conn, group.uuid)
    planned = collections.Counter(c.host for c in claims
                                  if c.group_uuid == group.uuid)
    if group.policy == "anti-affinity":
        for host, count in planned.items():
            if members[host] + count > group.max_per_host:
                raise GroupConflict(
                    f"server group {group.uuid}: host {host} would hold "
                    f"{members[host] + count} members, at most "
                    f"{group.max_per_host} allowed")
    elif group.policy == "affinity":
        hosts = set(members) | set(planned)
        if len(hosts) > 1:
            raise GroupConflict(
                f"server group {group.uuid}: members would be on "
                f"{len(hosts)} hosts, affinity allows one")


def _on_both_sides() -> sa.Join:
    """Allocations joined to the nodes they hold: a move in flight holds
    two, its destination and its source (a revert puts the consumer back
    there), so a group member counts on both. Select DISTINCT consumer and
    host to count a member once per host."""
    allocs = models.allocations
    nodes = models.compute_nodes
    return allocs.join(nodes, sa.or_(nodes.c.id == allocs.c.compute_node_id,
                                     nodes.c.id == allocs.c.source_node_id))


def group_hosts(conn: sa.Connection, group_uuid: str,
                exclude: Iterable[str] = ()) -> collections.Counter:
    """host -> number of the group's claimed members on it (consumers in
    ``exclude`` not counted)."""
    allocs = models.allocations
    nodes = models.compute_nodes
    query = (sa.select(allocs.c.consumer_uuid, nodes.c.host).distinct()
             .select_from(_on_both_sides())
             .where(allocs.c.group_uuid == group_uuid))
    exclude = list(exclude)
    if exclude:
        query = query.where(allocs.c.consumer_uuid.not_in(exclude))
    return collections.Counter(host for _, host in conn.execute(query))


def member_hosts(conn: sa.Connection, group_uuid: str | None,
                 members: Iterable[str], exclude: Iterable[str] = ()
                 ) -> collections.Counter:
    """host -> number of a server group's members placed on it: consumers
    claimed for the group (``group_uuid``) and the instances the caller
    names as ``members`` (nova's ``InstanceGroup.members``) that hold a
    claim, each consumer counted once; consumers in ``exclude`` left
    out. One query."""
    allocs = models.allocations
    nodes = models.compute_nodes
    members = list(dict.fromkeys(members))
    where = []
    if group_uuid:
        where.append(allocs.c.group_uuid == group_uuid)
    if members:
        where.append(allocs.c.consumer_uuid.in_(members))
    if not where:
        return collections.Counter()
    query = (sa.select(allocs.c.consumer_uuid, nodes.c.host).distinct()
             .select_from(_on_both_sides())
             .where(sa.or_(*where)))
    exclude = set(exclude)
    return collections.Counter(host for consumer, host in conn.execute(query)
                               if consumer not in exclude)


_CONSUMER_HOSTS = (
    sa.select(models.allocations.c.consumer_uuid, models.compute_nodes.c.host)
    .join(models.compute_nodes,
          models.compute_nodes.c.id == models.allocations.c.compute_node_id)
    .where(models.allocations.c.consumer_uuid.in_(
        sa.bindparam("uuids", expanding=True))))


def consumer_hosts(conn: sa.Connection, consumer_uuids: Iterable[str],
                   exclude: Iterable[str] = ()
                   ) -> dict[str, tuple[str, ...]]:
    """consumer uuid -> the hosts of its claims, for those of
    ``consumer_uuids`` that hold one (consumers in ``exclude`` left out):
    where the instances named by ``same_host`` / ``different_host`` hints
    are. One query."""
    uuids = list(dict.fromkeys(consumer_uuids))
    if not uuids:
        return {}
    exclude = set(exclude)
    out: dict[str, tuple[str, ...]] = {}
    for uuid, host in conn.execute(_CONSUMER_HOSTS, {"uuids": uuids}):
        if uuid not in exclude:
            out[uuid] = out.get(uuid, ()) + (host,)
    return out


def _deleting(where) -> sa.Delete:
    # DELETE ... RETURNING: a row is gone for any concurrent deleter, so its
    # usage is given back exactly once.
    allocs = models.allocations
    return allocs.delete().where(where).returning(*allocs.c)


def _delete(conn: sa.Connection, where) -> list[sa.Row]:
    return conn.execute(_deleting(where)).all()


def _of_consumers() -> sa.ColumnElement[bool]:
    """The claims of the consumers ``b_uuids`` (a list)."""
    return models.allocations.c.consumer_uuid.in_(
        sa.bindparam("b_uuids", expanding=True))


# Built once, as _CONSUME: building the expression per call cost more than
# running it (a release is a delete of its consumers, then a usage change).
_DELETE_CONSUMERS = _deleting(_of_consumers())


def _delete_consumers(conn: sa.Connection,
                      consumer_uuids: list[str]) -> list[sa.Row]:
    """:func:`_delete` of the allocations of ``consumer_uuids``."""
    return conn.execute(_DELETE_CONSUMERS,
                        {"b_uuids": list(consumer_uuids)}).all()


#: (node id, vcpus, memory_mb, disk_gb) of one side of a claim.
Usage = tuple[int, int, int, int]

_SOURCE_COLUMNS = ("source_node_id", "source_vcpus", "source_memory_mb",
                   "source_disk_gb")
_NO_SOURCE = dict.fromkeys(_SOURCE_COLUMNS)
#: A claim no longer moving: no source, nothing to confirm on arrival.
_NOT_MOVING = {**_NO_SOURCE, "confirm_on_arrival": False}


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
                   "expires_at", "confirm_on_arrival") + _SOURCE_COLUMNS
#: A claim's INSERT, by whether the claim expires.
_INSERT = {expiring: _insert_statement(expiring)
           for expiring in (False, True)}


def freed_by(rows: Iterable[sa.Row]) -> list[Usage]:
    """What releasing the claims ``rows`` (allocation rows, or
    :func:`placements` rows) gives back: both sides of a move in flight."""
    rows = list(rows)
    return _held(rows) + _sources(rows)


def _held(rows: Iterable[sa.Row]) -> list[Usage]:
    """What deleted allocation rows held on their node (the destination
    of a move in flight)."""
    return [(r.compute_node_id, r.vcpus, r.memory_mb, r.disk_gb)
            for r in rows]


def _sources(rows: Iterable[sa.Row]) -> list[Usage]:
    """What deleted allocation rows held on the source of their move."""
    return [(r.source_node_id, r.source_vcpus, r.source_memory_mb,
             r.source_disk_gb) for r in rows if r.source_node_id is not None]


def _give_back(conn: sa.Connection, usages: list[Usage]) -> None:
    _change_usage(conn, usages, -1)


def _change_usage(conn: sa.Connection, usages: list[Usage],
                  sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) ``usages`` on their nodes."""
    totals: dict[int, list[int]] = collections.defaultdict(
        lambda: [0, 0, 0, 0])
    for node_id, vcpus, memory_mb, disk_gb in usages:
        t = totals[node_id]
        t[0] += sign * vcpus
        t[1] += sign * memory_mb
        t[2] += sign * disk_gb
        t[3] += sign
    if not totals:
        return
    # In node id order: two transactions lock nodes in the same order.
    conn.execute(_CHANGE_USAGE, [
        {"b_node_id": node_id, "b_vcpus": vcpus, "b_memory": memory,
         "b_disk": disk, "b_count": count}
        for node_id, (vcpus, memory, disk, count) in sorted(totals.items())])


# A release's or a move's: no generation or capacity check, the usage
# given back or moved is already counted.
_CHANGE_USAGE = _usage_update()


def _reinsert(conn: sa.Connection, rows: list[sa.Row],
              change: Callable[[sa.Row], dict]) -> None:
    """Insert rows deleted by :func:`_delete` again, with ``change(row)``
    applied (the consumer keeps its uuid, project, group and age)."""
    if rows:
        columns = [c.name for c in models.allocations.c if c.name != "id"]
        conn.execute(models.allocations.insert(), [
            {**{c: getattr(r, c) for c in columns}, **change(r)}
            for r in rows])


def _start_moves(conn: sa.Connection, consumer_uuids: list[str],
                 moving_from: dict[str, tuple] | None = None
                 ) -> dict[str, dict[str, int]]:
    """Take the moving consumers' claims out of the way of their new ones.

    :returns: consumer uuid -> its ``source_*`` column values: its claim
        now, or, if it was already moving, the source of that move (whose
        abandoned destination is given back here).
    """
    rows = _delete_consumers(conn, consumer_uuids)
    for r in rows:
        # The claim the move was planned against must still be the one
        # held: else a concurrent request (a twin) moved it meanwhile.
        seen = (moving_from or {}).get(r.consumer_uuid)
        if seen is not None and seen != (r.compute_node_id,
                                         r.source_node_id):
            raise ConsumerExists(
                f"consumer {r.consumer_uuid} was moved concurrently")
    _give_back(conn, _held(r for r in rows if r.source_node_id is not None))
    out = {}
    for r in rows:
        if r.source_node_id is not None:
            out[r.consumer_uuid] = {c: getattr(r, c) for c in _SOURCE_COLUMNS}
        else:
            out[r.consumer_uuid] = dict(zip(_SOURCE_COLUMNS, (
                r.compute_node_id, r.vcpus, r.memory_mb, r.disk_gb)))
    return out


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
    still releases the claim (:func:`_until_none_missed`)."""
    rows = _until_none_missed(conn, consumer_uuids, _delete_consumers)
    _give_back(conn, freed_by(rows))
    return len(rows)


def _looking(*where) -> sa.Select:
    """A second look of :func:`_until_none_missed`: the consumer and the
    row id of the claims of the consumers ``b_uuids`` that match
    ``where``, the condition of the writer that looks."""
    allocs = models.allocations
    return sa.select(allocs.c.consumer_uuid, allocs.c.id).where(
        _of_consumers(), *where)


#: Which of ``b_uuids`` hold a claim.
_HELD = _looking()


def _until_none_missed(conn: sa.Connection, consumer_uuids: list[str],
                       act: Callable[[sa.Connection, list[str]],
                                     list[sa.Row]],
                       look: sa.Select = _HELD,
                       params: dict | None = None) -> list[sa.Row]:
    """``act(conn, uuids)`` for ``consumer_uuids``, and again for those it
    missed while they hold a claim it would act on: every row it returned
    (each with a ``consumer_uuid``; the consumers it acted on).

    ``act`` writes the claims of ``uuids`` that match its condition, and
    ``look`` (:func:`_looking`, binds ``params`` besides ``b_uuids``)
    selects the claims that match the same condition, or it would miss
    what ``look`` finds, round after round.

    A move's end (:func:`confirm_move`, :func:`revert_move`,
    :func:`expire`, :func:`relocate`) deletes the consumer's row and
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


def confirm(engine: sa.Engine, consumer_uuids: list[str]) -> int:
    """Make the consumers' claims permanent (until released).
    :returns: how many of them hold a claim (confirmed now or before).
    """
    if not consumer_uuids:
        return 0
    allocs = models.allocations
    with engine.begin() as conn:
        return conn.execute(
            allocs.update().where(allocs.c.consumer_uuid.in_(consumer_uuids))
            .values(expires_at=None)).rowcount


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


#: A claim moving: it holds a source besides its destination.
_IS_MOVING = models.allocations.c.source_node_id.is_not(None)
#: A move's end's DELETE of the moving claims of ``b_uuids``, and its
#: second look, for the same claims.
_DELETE_MOVING = _deleting(sa.and_(_of_consumers(), _IS_MOVING))
_MOVING_LOOK = _looking(_IS_MOVING)


def _take_moving(conn: sa.Connection,
                 consumer_uuids: list[str]) -> list[sa.Row]:
    """Delete the consumers' moving claims, for their move's end to insert
    what they become: the deleted rows. Also one that a :func:`relocate`
    (which keeps the source) re-inserted while this waited for it
    (:func:`_until_none_missed`): its end would be lost, the source held
    for good."""
    return _until_none_missed(
        conn, consumer_uuids,
        lambda conn, uuids: conn.execute(_DELETE_MOVING,
                                         {"b_uuids": uuids}).all(),
        _MOVING_LOOK)


def _revert(conn: sa.Connection, rows: list[sa.Row], ttl: int = 0,
            expired: bool = False) -> int:
    """Revert the moves of ``rows`` (moving claims, deleted): give the
    destinations back and make the sources the claims again (confirmed, or
    provisional for ``ttl`` seconds). ``expired``: nothing said the moves
    ended, their time ran out; a move waiting for its confirm remembers
    the destination it gave back (``expired_*``, see :func:`relocate`).
    :returns: how many moves were reverted."""
    _give_back(conn, _held(rows))
    expires_at = _deadline(conn, ttl) if rows else None
    _reinsert(conn, rows, lambda r: {
        "compute_node_id": r.source_node_id, "vcpus": r.source_vcpus,
        "memory_mb": r.source_memory_mb, "disk_gb": r.source_disk_gb,
        "expires_at": expires_at, **_NOT_MOVING,
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
        _give_back(conn, _sources(rows))
        expires_at = _deadline(conn, ttl) if rows else None
        _reinsert(conn, rows, lambda r: {"expires_at": expires_at,
                                         **_NOT_MOVING})
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
        return _revert(conn, _take_moving(conn, consumer_uuids), ttl)


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
_RELOCATE = _deleting(sa.and_(_of_consumers(), *_relocatable()))
_RELOCATABLE = _looking(*_relocatable())


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
    relocated too (:func:`_until_none_missed`).
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
        rows = _until_none_missed(
            conn, consumer_uuids,
            lambda conn, uuids: conn.execute(_RELOCATE, {
                **params, "b_uuids": uuids}).all(),
            _RELOCATABLE, params)
        resumed = [r for r in rows if r.expired_node_id == node_id
                   and r.consumer_uuid in resumable]
        moved = [r for r in rows if r.expired_node_id != node_id
                 or r.consumer_uuid not in resumable]
        _give_back(conn, _held(moved))
        _change_usage(conn, [(node_id, r.vcpus, r.memory_mb, r.disk_gb)
                             for r in moved]
                      + [(node_id, r.expired_vcpus, r.expired_memory_mb,
                          r.expired_disk_gb) for r in resumed], +1)
        _reinsert(conn, moved, lambda r: {"compute_node_id": node_id,
                                          "expires_at": None, **_NO_EXPIRED})
        # Resumed: the claim it held is the source again (still counted
        # there), the expired destination the claim.
        _reinsert(conn, resumed, lambda r: {
            **dict(zip(_SOURCE_COLUMNS, (r.compute_node_id, r.vcpus,
                                         r.memory_mb, r.disk_gb))),
            "compute_node_id": node_id, "vcpus": r.expired_vcpus,
            "memory_mb": r.expired_memory_mb, "disk_gb": r.expired_disk_gb,
            "expires_at": None, **_NO_EXPIRED})
    return len(rows)


def expire(engine: sa.Engine) -> int:
    """Release every provisional claim whose time has passed (by the
    database's clock); an expired move is reverted instead, so its source
    is kept (and one waiting for its confirm remembers its destination,
    see :func:`relocate`). Safe to run in many workers at once.
    :returns: the number of claims released or reverted.
    """
    allocs = models.allocations
    expired = sa.and_(allocs.c.expires_at.is_not(None),
                      allocs.c.expires_at < clock.utcnow())
    with engine.begin() as conn:
        reverted = _revert(conn, _delete(conn, sa.and_(expired, _IS_MOVING)),
                           expired=True)
        rows = _delete(conn, expired)
        _give_back(conn, _held(rows))
    return reverted + len(rows)


def usage_sides() -> sa.Subquery:
    """Every side of every claim as rows of ``consumer_uuid``,
    ``compute_node_id``, ``project_id``, ``vcpus``, ``memory_mb``,
    ``disk_gb``, ``moving`` ("source" / "destination" for the two sides of
    a move in flight, else None): what each node's usage must add up to.
    The one place that knows a move holds two nodes."""
    a = models.allocations
    return sa.union_all(
        sa.select(a.c.consumer_uuid, a.c.compute_node_id, a.c.project_id,
                  a.c.vcpus, a.c.memory_mb, a.c.disk_gb,
                  sa.case((a.c.source_node_id.is_not(None),
                           sa.literal("destination")),
                          else_=sa.null()).label("moving")),
        sa.select(a.c.consumer_uuid,
                  a.c.source_node_id.label("compute_node_id"),
                  a.c.project_id, a.c.source_vcpus.label("vcpus"),
                  a.c.source_memory_mb.label("memory_mb"),
                  a.c.source_disk_gb.label("disk_gb"),
                  sa.literal("source").label("moving"))
        .where(a.c.source_node_id.is_not(None)),
    ).subquery("usage_sides")


@dataclasses.dataclass(frozen=True)
class Holding:
    """Where one consumer's claim is: its host, and while it is moving,
    the host it is moving from."""
    host: str
    source_host: str | None
    provisional: bool       # not confirmed yet (expires unless confirmed)
    #: The claim's node is deleted (its host's node was re-created under
    #: a new uuid): it counts on no node the scheduler plans on.
    node_deleted: bool = False
    #: Its move has no confirm step: being seen on its destination ends it.
    confirm_on_arrival: bool = False
    #: The host of the destination its expired move gave back
    #: (``expired_node_id``, see :func:`relocate`).
    expired_host: str | None = None


def holdings(engine: sa.Engine, consumer_uuids: list[str]
             ) -> dict[str, Holding]:
    """consumer uuid -> :class:`Holding`, for those that hold a claim."""
    uuids = list(dict.fromkeys(consumer_uuids))
    if not uuids:
        return {}
    a, n = models.allocations, models.compute_nodes
    source, expired = n.alias("source"), n.alias("expired")
    query = (sa.select(a.c.consumer_uuid, n.c.host,
                       source.c.host.label("source_host"), a.c.expires_at,
                       n.c.deleted, a.c.confirm_on_arrival,
                       expired.c.host.label("expired_host"))
             .join(n, n.c.id == a.c.compute_node_id)
             .outerjoin(source, source.c.id == a.c.source_node_id)
             .outerjoin(expired, expired.c.id == a.c.expired_node_id)
             .where(a.c.consumer_uuid.in_(uuids)))
    with engine.connect() as conn:
        return {row.consumer_uuid: Holding(row.host, row.source_host,
                                           row.expires_at is not None,
                                           row.deleted != 0,
                                           bool(row.confirm_on_arrival),
                                           row.expired_host)
                for row in conn.execute(query)}


def _placements_statement() -> sa.Select:
    allocs = models.allocations
    nodes = models.compute_nodes
    return (sa.select(allocs.c.consumer_uuid, allocs.c.vcpus,
                      allocs.c.memory_mb, allocs.c.disk_gb,
                      allocs.c.compute_node_id, allocs.c.source_node_id,
                      allocs.c.source_vcpus, allocs.c.source_memory_mb,
                      allocs.c.source_disk_gb,
                      nodes.c.host,
                      nodes.c.hypervisor_hostname,
                      nodes.c.uuid.label("node_uuid"),
                      (nodes.c.deleted != 0).label("node_deleted"))
            .join(nodes, nodes.c.id == allocs.c.compute_node_id)
            .where(allocs.c.consumer_uuid.in_(
                sa.bindparam("uuids", expanding=True))))


_PLACEMENTS = _placements_statement()


def placements(engine: sa.Engine, consumer_uuids: list[str]
               ) -> dict[str, sa.Row]:
    """Existing claims of these consumers: uuid -> row with host, nodename,
    node uuid, the claimed sizes and ``node_deleted`` (the claim's node is
    deleted: the claim counts on no node the scheduler plans on)."""
    with engine.connect() as conn:
        return {row.consumer_uuid: row for row in
                conn.execute(_PLACEMENTS, {"uuids": list(consumer_uuids)})}


def holds_all(held: dict[str, sa.Row], count: int) -> bool:
    """Whether all ``count`` consumers of a request hold a claim (``held``,
    as :func:`placements` reads them) on a live node: then what they
    hold answers a re-send. A claim on a deleted node places nothing; the
    request is placed again, replacing it."""
    return (len(held) == count
            and not any(row.node_deleted for row in held.values()))
