"""Claims of one server group serialize on the group's row, on every
database, without deadlocking each other; a release waiting for a move's
end still releases the claim."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from scheduler import claims
from scheduler import fleet
from scheduler.db import models
from scheduler.db import retry
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


@pytest.mark.parametrize("end", ["revert_move", "confirm_move"])
def test_a_release_that_waited_for_a_move_to_end_releases_the_claim(
        engine, end):
    """A move's end deletes the consumer's row and inserts its new one; a
    release queued behind it on the row's lock used to find the old row
    gone and, on PostgreSQL, not see the new one: it released nothing and
    the claim stayed held for good (``revert_move`` then release: 0
    released, the source claim left, usage 1 vCPU on h0). Whichever runs
    first, nothing may be left."""
    n = models.compute_nodes
    with engine.connect() as conn:
        nodes = {r.host: r for r in conn.execute(sa.select(n))}
    consumer = str(uuid.uuid4())
    claims.claim(engine, [claims.Claim(consumer, nodes["h0"].id, "h0",
                                       nodes["h0"].generation, 1, 512, 1)])
    claims.claim(engine, [claims.Claim(consumer, nodes["h1"].id, "h1",
                                       nodes["h1"].generation, 2, 1024, 2)],
                 move=[consumer])
    a = models.allocations
    outcome: dict[str, int] = {}

    def run(name, call):
        # Retried as the service retries them: on MariaDB the two
        # deadlock and one of them goes again.
        outcome[name] = retry.retrying(5)(call)(engine, [consumer])

    locker = engine.connect()
    with locker.begin():
        # Hold the row (PostgreSQL, MariaDB) so that the move's end and
        # then the release queue for it, in that order.
        locker.execute(sa.select(a.c.id).where(a.c.consumer_uuid == consumer)
                       .with_for_update()).all()
        ending = threading.Thread(target=run,
                                  args=(end, getattr(claims, end)))
        releasing = threading.Thread(target=run,
                                     args=("release", claims.release))
        ending.start()
        time.sleep(0.5)
        releasing.start()
        time.sleep(0.5)
    locker.close()
    ending.join(30)
    releasing.join(30)
    assert claims.placements(engine, [consumer]) == {}, outcome
    with engine.connect() as conn:
        assert [(r.host, r.vcpus_used, r.memory_mb_used, r.local_gb_used)
                for r in conn.execute(sa.select(n).order_by(n.c.host))] == [
            ("h0", 0, 0, 0), ("h1", 0, 0, 0)] + [
            (f"h{i}", 0, 0, 0) for i in range(2, HOSTS)], outcome
    assert outcome["release"] + outcome[end] >= 1
