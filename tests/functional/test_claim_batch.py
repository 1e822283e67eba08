"""Group commit on every database: claims queued behind a commit share one
transaction, each keeps its own outcome, and two processes' batches never
deadlock each other nor overcommit a node."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import random
import threading
import time
import uuid

from prometheus_client.parser import text_string_to_metric_families
import pytest
import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.claims.refusals import ConsumerExists
from scheduler.claims.refusals import NoRoom
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from scheduler.sim import fleet
from scheduler import metrics
from scheduler.claims.batch import ClaimBatcher
from scheduler.db import clock
from scheduler.db import models
from tests.functional.conftest import every_database
from tests.functional.conftest import node

pytestmark = every_database

HOSTS = 6


@pytest.fixture
def engine(engine):
    fleet.register(engine, [node(f"h{i}", vcpus=64, memory_mb=65536)
                            for i in range(HOSTS)])
    return engine


def _nodes(engine) -> dict[str, sa.Row]:
    n = models.compute_nodes
    with engine.connect() as conn:
        return {r.host: r for r in conn.execute(sa.select(n))}


def _claim(row: sa.Row, consumer: str | None = None,
           generation: int | None = None) -> Claim:
    return Claim(consumer or str(uuid.uuid4()), row.id, row.host,
                 row.generation if generation is None else generation,
                 1, 512, 1)


@contextlib.contextmanager
def row_locked(engine, row: sa.Row):
    """Another writer holds ``row`` (on SQLite: the write lock) until the
    block ends, so a claim on it waits there."""
    n = models.compute_nodes
    with engine.connect() as conn:
        with conn.begin() as tx:
            conn.execute(n.update().where(n.c.id == row.id)
                         .values(host=n.c.host))
            yield
            tx.rollback()


def _wait(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _batches() -> float:
    """Transactions so far in this process that made several claims."""
    body, _ = metrics.render()
    for family in text_string_to_metric_families(body.decode()):
        if family.name == "scheduler_claim_batch_size":
            return sum(s.value for s in family.samples
                       if s.name.endswith("_count"))
    return 0.0


def test_each_claim_of_a_batch_keeps_its_own_outcome(engine):
    rows = _nodes(engine)
    placed = str(uuid.uuid4())
    consume.claim(engine, [_claim(rows["h5"], placed)])
    rows = _nodes(engine)
    batcher = ClaimBatcher(engine, max_batch=16)
    calls = {"first": [_claim(rows["h0"])],
             "won": [_claim(rows["h1"])],
             "lost race": [_claim(rows["h2"],
                                  generation=rows["h2"].generation + 3)],
             "already placed": [_claim(rows["h3"], placed)],
             "also won": [_claim(rows["h4"])]}
    outcome: dict[str, object] = {}

    def call(name):
        try:
            batcher.claim(calls[name])
            outcome[name] = None
        except Exception as e:
            outcome[name] = e

    threads = {name: threading.Thread(target=call, args=(name,))
               for name in calls}
    with row_locked(engine, rows["h0"]):
        threads["first"].start()
        _wait(lambda: batcher._leading)
        for name, thread in threads.items():
            if name != "first":
                thread.start()
        _wait(lambda: len(batcher._queue) == len(calls) - 1)
    for thread in threads.values():
        thread.join(60)
    assert outcome["first"] is None
    assert outcome["won"] is None and outcome["also won"] is None
    assert type(outcome["lost race"]) is ClaimConflict
    assert isinstance(outcome["already placed"], ConsumerExists)
    after = _nodes(engine)
    for host, moved in (("h0", 1), ("h1", 1), ("h2", 0), ("h3", 0),
                        ("h4", 1)):
        assert after[host].generation == rows[host].generation + moved, host
        assert after[host].memory_mb_used == \
            rows[host].memory_mb_used + 512 * moved, host


def test_two_processes_batching_on_the_same_nodes_never_deadlock(engine):
    """Two batchers (two worker processes) with eight request threads each
    claim on the same six nodes, planning as the host manager does: from
    the last generation each knows. Every claim either commits or loses a
    race; none fails otherwise (a deadlock would), and usage is exactly
    what the allocations add up to."""
    batchers = [ClaimBatcher(engine, max_batch=16) for _ in range(2)]
    known = [dict((h, r.generation) for h, r in _nodes(engine).items())
             for _ in batchers]
    ids = {h: r.id for h, r in _nodes(engine).items()}
    lock = threading.Lock()
    made = collections.Counter()
    errors: list[BaseException] = []
    batches_before = _batches()
    deadline = time.monotonic() + 6

    def worker(k: int, seed: int) -> None:
        rnd = random.Random(seed)
        while time.monotonic() < deadline:
            host = f"h{rnd.randrange(HOSTS)}"
            with lock:
                seen = known[k][host]
                known[k][host] = seen + 1       # assumed, as planned
            try:
                batchers[k].claim([Claim(
                    str(uuid.uuid4()), ids[host], host, seen, 1, 512, 1)])
                made[host] += 1
            except ClaimConflict:
                with lock:                      # forget: re-read it
                    known[k][host] = _nodes(engine)[host].generation
            except Exception as e:
                errors.append(e)
                return

    threads = [threading.Thread(target=worker, args=(k, 100 * k + t))
               for k in range(2) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert sum(made.values()) > 0
    assert _batches() > batches_before, "no claims were batched"
    a = models.allocations
    with engine.connect() as conn:
        per_node = dict(conn.execute(
            sa.select(a.c.compute_node_id, sa.func.count())
            .group_by(a.c.compute_node_id)).all())
    for host, row in _nodes(engine).items():
        assert per_node.get(row.id, 0) == made[host]
        assert row.memory_mb_used == 512 * made[host]


def _allocation(engine, consumer: str) -> sa.Row | None:
    a = models.allocations
    with engine.connect() as conn:
        return conn.execute(sa.select(
            a, clock.utcnow().label("now")).where(
            a.c.consumer_uuid == consumer)).first()


def test_a_lone_claim_has_the_outcomes_of_a_transaction(engine):
    """What a lone claim writes and how it refuses are the same on every
    database, whether it is a transaction or (PostgreSQL) one statement."""
    batcher = ClaimBatcher(engine, max_batch=16)
    rows = _nodes(engine)
    placed = str(uuid.uuid4())
    claim = dataclasses.replace(_claim(rows["h0"], placed),
                                project_id="p1", user_id="u1")
    batcher.claim([claim], ttl=600)
    after = _nodes(engine)["h0"]
    assert after.generation == rows["h0"].generation + 1
    assert (after.vcpus_used, after.memory_mb_used, after.local_gb_used) \
        == (1, 512, 1)
    assert after.free_ram_mb == rows["h0"].free_ram_mb - 512
    assert after.updated_at is not None
    row = _allocation(engine, placed)
    assert (row.compute_node_id, row.project_id, row.user_id, row.vcpus,
            row.memory_mb, row.disk_gb, row.group_uuid) == (
        after.id, "p1", "u1", 1, 512, 1, None)
    assert 590 <= (row.expires_at - row.now).total_seconds() <= 600

    refusals = {
        "moved": (_claim(after, generation=after.generation - 1),
                  ClaimConflict),
        "no room": (dataclasses.replace(
            _claim(after), memory_mb=10 ** 6), NoRoom),
        "placed": (_claim(after, placed), ConsumerExists)}
    raised = {}
    for name, (refused, error) in refusals.items():
        with pytest.raises(error) as caught:
            batcher.claim([refused])
        raised[name] = caught.value
        assert type(caught.value) is error, name
        assert _nodes(engine)["h0"] == after, name
        if name != "placed":
            assert _allocation(engine, refused.consumer_uuid) is None, name
    assert set(raised["no room"].refused) == {"memory_mb"}
    batcher.close()


def test_a_lone_claim_on_postgresql_is_one_statement(engine):
    batcher = ClaimBatcher(engine, max_batch=16)
    rows = _nodes(engine)
    # Connects (and pings) first; on PostgreSQL, prepares the statement.
    batcher.claim([_claim(rows["h0"])])
    statements = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda *args: statements.append(args[2]))
    batcher.claim([_claim(rows["h1"])])
    one_statement = engine.dialect.name in consume.ONE_STATEMENT
    assert one_statement == (engine.dialect.name == "postgresql")
    # Elsewhere a transaction: the node's UPDATE, the allocation's INSERT.
    assert len(statements) == (1 if one_statement else 2), statements
    if one_statement:
        # Prepared once per connection: planned once, not per claim.
        assert statements[0].startswith("EXECUTE "), statements
    batcher.close()
