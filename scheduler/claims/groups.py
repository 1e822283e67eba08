"""Server groups with a hard policy: the claim keeps their rule.

Claims for a server group with a hard policy first update the group's
``claim_groups`` row (:func:`lock_group`). That serializes the group's
claims (a row lock on PostgreSQL and MySQL/MariaDB, the single writer on
SQLite), so the membership check that follows (:func:`check_group`),
inside the same transaction, sees every committed member (READ COMMITTED
on both servers; see :func:`scheduler.db.engine.create_engine`): two
concurrent boots cannot both find the group empty.
"""
from __future__ import annotations

import collections
import dataclasses

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from scheduler.claims.refusals import GroupConflict
from scheduler.db import allocations
from scheduler.db import models
from scheduler.hosts.planned import Claim


@dataclasses.dataclass(frozen=True)
class GroupRule:
    """A hard server-group policy the claim must keep."""
    uuid: str
    policy: str                 # "affinity" or "anti-affinity"
    max_per_host: int = 1


def lock_group(conn: sa.Connection, group: GroupRule) -> None:
    """Create the group's row or bump it: one write that holds the row's
    lock (PostgreSQL, MySQL) or the write lock (SQLite) to the end of the
    transaction. The row keeps the group's policy and per-host limit as
    this claim states them: what a drain moves the members by
    (:func:`policies`).

    One upsert rather than insert-if-absent then UPDATE: on InnoDB an
    ``INSERT IGNORE`` that finds the row takes a *shared* lock, and two
    claims holding it that both upgrade to exclusive for the UPDATE
    deadlock; ``ON DUPLICATE KEY UPDATE`` takes the exclusive lock at once.
    """
    table = models.claim_groups
    rule = {"policy": group.policy, "max_per_host": group.max_per_host}
    bump = {"generation": table.c.generation + 1, **rule}
    row = {"uuid": group.uuid, "generation": 1, **rule}
    dialect = conn.dialect.name
    if dialect == "mysql":
        statement = (mysql.insert(table).values(row)
                     .on_duplicate_key_update(bump))
    else:
        insert = {"postgresql": postgresql.insert,
                  "sqlite": sqlite.insert}[dialect]
        statement = (insert(table).values(row)
                     .on_conflict_do_update(index_elements=[table.c.uuid],
                                            set_=bump))
    conn.execute(statement)


def policies(conn: sa.Connection, group_uuids: list[str]
             ) -> dict[str, GroupRule]:
    """group uuid -> its hard rule, as its claims last stated it, for those
    of ``group_uuids`` with one on record (soft groups have none: their
    claims keep no rule)."""
    table = models.claim_groups
    if not group_uuids:
        return {}
    rows = conn.execute(sa.select(table.c.uuid, table.c.policy,
                                  table.c.max_per_host)
                        .where(table.c.uuid.in_(sorted(set(group_uuids))),
                               table.c.policy.is_not(None)))
    return {r.uuid: GroupRule(r.uuid, r.policy, r.max_per_host or 1)
            for r in rows}


def check_group(conn: sa.Connection, group: GroupRule,
                claims: list[Claim]) -> None:
    """Raise GroupConflict if ``claims`` (those naming ``group``) would
    break its policy, counting the members already claimed: call after
    :func:`lock_group`, in the same transaction."""
    members = allocations.group_hosts(conn, group.uuid)
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
