"""Claims of one server group serialize on the group's row, on every
database, without deadlocking each other."""
from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa

from scheduler import claims
from scheduler import fleet
from scheduler.db import models
from tests.functional.conftest import node

HOSTS = 8


@pytest.fixture
def engine(engine):
    fleet.register(engine, [node(f"h{i}") for i in range(HOSTS)])
    return engine


def _claim(engine: sa.Engine, host: str, group: claims.GroupRule) -> None:
    n = models.compute_nodes
    with engine.connect() as conn:
        node = conn.execute(sa.select(n.c.id, n.c.generation)
                            .where(n.c.host == host)).one()
    claims.claim(engine, [claims.Claim(
        str(uuid.uuid4()), node.id, host, node.generation, 1, 512, 1,
        group_uuid=group.uuid)], group=group)


def test_concurrent_claims_of_one_group_wait_for_each_other_not_deadlock(
        engine):
    """The group's row exists (an earlier member); then a member per host
    claims at once, with no retry. Every claim must succeed: they queue on
    the group's row. (Insert-if-absent then UPDATE would not: on InnoDB
    both take a shared lock on the existing row and deadlock upgrading
    it.)"""
    group = claims.GroupRule(str(uuid.uuid4()), "anti-affinity")
    _claim(engine, "h0", group)
    start = threading.Barrier(HOSTS - 1, timeout=30)
    errors: list[BaseException] = []

    def member(host: str) -> None:
        start.wait()
        try:
            _claim(engine, host, group)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=member, args=(f"h{i}",))
               for i in range(1, HOSTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    with engine.connect() as conn:
        assert claims.group_hosts(conn, group.uuid) == {
            f"h{i}": 1 for i in range(HOSTS)}
        generation = conn.execute(
            sa.select(models.claim_groups.c.generation)
            .where(models.claim_groups.c.uuid == group.uuid)).scalar_one()
    assert generation == HOSTS
