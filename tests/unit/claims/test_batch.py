"""Group commit: claims that queue up in one process share a transaction,
each with its own outcome. Against a real SQLite file: a raw connection
holding SQLite's write lock keeps the first claim waiting while the others
queue behind it."""
from __future__ import annotations

import contextlib
import sqlite3
import threading
import time

import pytest
import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.claims.batch import ClaimBatcher
from scheduler.claims.refusals import ConsumerExists
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import node
from tests.unit.fakes import node_row

HOSTS = ("h1", "h2", "h3", "h4")


def _uuid(i: int) -> str:
    return f"bbbbbbbb-0000-4000-8000-{i:012d}"


@pytest.fixture
def rows(register, engine):
    register(*(node(h, vcpus=8, memory_mb=8192, local_gb=100)
               for h in HOSTS))
    return {h: node_row(engine, h) for h in HOSTS}


@pytest.fixture
def commits(engine):
    """Transactions committed through ``engine`` from now on."""
    seen = []
    sa.event.listen(engine, "commit", lambda conn: seen.append(1))
    return seen


def _claim(row, i: int, generation: int | None = None,
           memory_mb: int = 1024) -> Claim:
    return Claim(consumer_uuid=_uuid(i), node_id=row.id, host=row.host,
                 generation=row.generation if generation is None
                 else generation, vcpus=1, memory_mb=memory_mb, disk_gb=1)


@contextlib.contextmanager
def write_locked(engine):
    """Hold SQLite's write lock from another connection for the block."""
    con = sqlite3.connect(engine.url.database, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        con.execute("ROLLBACK")
        con.close()


def _run_queued(batcher, first, queued):
    """Start ``first`` (its claim waits for the write lock), then the
    ``queued`` claims behind it; release the lock once they all wait.
    :returns: each claim's error (None: made), in order."""
    everything = [first] + list(queued)
    errors: list = [None] * len(everything)

    def call(i, to_claim):
        try:
            batcher.claim(to_claim)
        except Exception as e:
            errors[i] = e

    threads = [threading.Thread(target=call, args=(i, c))
               for i, c in enumerate(everything)]
    with write_locked(batcher.engine):
        threads[0].start()
        _wait(lambda: batcher._leading)
        for t in threads[1:]:
            t.start()
        _wait(lambda: len(batcher._queue) == len(queued))
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    return errors


def _wait(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_claims_queued_behind_a_commit_share_the_next_transaction(
        engine, rows, commits):
    batcher = ClaimBatcher(engine, max_batch=16)
    errors = _run_queued(batcher, [_claim(rows["h1"], 0)],
                         [[_claim(rows[h], i)] for i, h in
                          enumerate(("h2", "h3", "h4"), 1)])
    assert errors == [None] * 4
    # The first alone, the three that queued behind it together.
    assert len(commits) == 2
    assert {a.consumer_uuid for a in allocation_rows(engine)} == {
        _uuid(i) for i in range(4)}
    for h in HOSTS:
        row = node_row(engine, h)
        assert (row.memory_mb_used, row.generation) == (1024, 1)


def test_a_batch_never_exceeds_its_size(engine, rows, commits):
    batcher = ClaimBatcher(engine, max_batch=2)
    errors = _run_queued(batcher, [_claim(rows["h1"], 0)],
                         [[_claim(rows[h], i)] for i, h in
                          enumerate(("h2", "h3", "h4"), 1)])
    assert errors == [None] * 4
    assert len(commits) == 3           # 1, then 2, then 1
    assert len(allocation_rows(engine)) == 4


def test_a_lost_race_in_a_batch_fails_its_own_request_alone(
        engine, rows, commits):
    batcher = ClaimBatcher(engine, max_batch=16)
    stale = _claim(rows["h3"], 2, generation=rows["h3"].generation + 5)
    errors = _run_queued(batcher, [_claim(rows["h1"], 0)],
                         [[_claim(rows["h2"], 1)], [stale],
                          [_claim(rows["h4"], 3)]])
    assert errors[:2] == [None, None] and errors[3] is None
    assert type(errors[2]) is ClaimConflict
    assert errors[2].node_id == rows["h3"].id
    assert node_row(engine, "h3").generation == rows["h3"].generation
    assert {a.consumer_uuid for a in allocation_rows(engine)} == {
        _uuid(0), _uuid(1), _uuid(3)}


def test_a_consumer_already_placed_is_rolled_back_alone(engine, rows):
    consume.claim(engine, [_claim(rows["h4"], 7)])
    batcher = ClaimBatcher(engine, max_batch=16)
    again = Claim(consumer_uuid=_uuid(7), node_id=rows["h2"].id, host="h2",
                  generation=rows["h2"].generation, vcpus=1, memory_mb=1024,
                  disk_gb=1)
    errors = _run_queued(batcher, [_claim(rows["h1"], 0)],
                         [[again], [_claim(rows["h3"], 2)]])
    assert errors[0] is None and errors[2] is None
    assert isinstance(errors[1], ConsumerExists)
    # Its node UPDATE was rolled back with the batch; the others were
    # made again without it.
    h2 = node_row(engine, "h2")
    assert (h2.memory_mb_used, h2.generation) == (0, rows["h2"].generation)
    assert node_row(engine, "h3").memory_mb_used == 1024


def test_after_a_repeated_consumer_the_others_are_decided_again(engine,
                                                                 rows):
    """Made again without the consumer already placed, a claim planned on
    top of it (same node, the generation after its claim) now loses the
    race; the rest are made."""
    consume.claim(engine, [_claim(rows["h4"], 7)])
    batcher = ClaimBatcher(engine, max_batch=16)
    g = rows["h3"].generation
    again = Claim(consumer_uuid=_uuid(7), node_id=rows["h3"].id, host="h3",
                  generation=g, vcpus=1, memory_mb=1024, disk_gb=1)
    errors = _run_queued(batcher, [_claim(rows["h1"], 0)],
                         [[again], [_claim(rows["h3"], 2, generation=g + 1)],
                          [_claim(rows["h2"], 3)]])
    assert errors[0] is None and errors[3] is None
    assert isinstance(errors[1], ConsumerExists)
    assert type(errors[2]) is ClaimConflict
    h3 = node_row(engine, "h3")
    assert (h3.memory_mb_used, h3.generation) == (0, g)
    assert {a.consumer_uuid for a in allocation_rows(engine)} == {
        _uuid(7), _uuid(0), _uuid(3)}


def test_claims_on_one_node_commit_in_the_order_they_were_planned(
        engine, rows, commits):
    """The second request planned on the first one's claim (generation + 1,
    as the host manager assumes it): both fit, in arrival order, whatever
    their place among other nodes' claims."""
    batcher = ClaimBatcher(engine, max_batch=16)
    g = rows["h3"].generation
    errors = _run_queued(batcher, [_claim(rows["h1"], 0)],
                         [[_claim(rows["h3"], 1, generation=g)],
                          [_claim(rows["h2"], 2)],
                          [_claim(rows["h3"], 3, generation=g + 1)]])
    assert errors == [None] * 4
    h3 = node_row(engine, "h3")
    assert (h3.memory_mb_used, h3.generation) == (2048, g + 2)


def test_a_failed_transaction_fails_every_claim_in_it_and_writes_nothing(
        engine, rows):
    batcher = ClaimBatcher(engine, max_batch=16)
    broken = Claim(consumer_uuid=None, node_id=rows["h3"].id,  # NOT NULL
                   host="h3", generation=rows["h3"].generation, vcpus=1,
                   memory_mb=1024, disk_gb=1)
    errors = _run_queued(batcher, [_claim(rows["h1"], 0)],
                         [[_claim(rows["h2"], 1)], [broken]])
    assert errors[0] is None
    assert type(errors[1]) is type(errors[2])
    assert str(errors[1]) == str(errors[2]) and "NOT NULL" in str(errors[1])
    assert not isinstance(errors[1], ClaimConflict)
    assert {a.consumer_uuid for a in allocation_rows(engine)} == {_uuid(0)}
    assert node_row(engine, "h2").generation == rows["h2"].generation


def test_claims_on_several_nodes_are_made_alone(engine, rows):
    """They would lock rows out of node order within a batch."""
    batcher = ClaimBatcher(engine, max_batch=16)
    two_nodes = [_claim(rows["h2"], 1), _claim(rows["h3"], 2)]
    errors = []
    with write_locked(engine):
        first = threading.Thread(
            target=batcher.claim, args=([_claim(rows["h1"], 0)],))
        first.start()
        _wait(lambda: batcher._leading)
        other = threading.Thread(
            target=lambda: errors.append(batcher.claim(two_nodes)))
        other.start()
        time.sleep(0.2)
        assert batcher._queue == []     # not queued: waiting on SQLite
    first.join(30)
    other.join(30)
    assert errors == [None]
    assert len(allocation_rows(engine)) == 3


def test_size_one_gives_every_claim_its_own_transaction(engine, rows,
                                                        commits):
    batcher = ClaimBatcher(engine, max_batch=1)
    threads = [threading.Thread(target=batcher.claim,
                                args=([_claim(rows[h], i)],))
               for i, h in enumerate(HOSTS)]
    with write_locked(engine):
        for t in threads:
            t.start()
        time.sleep(0.2)
        assert batcher._queue == []
    for t in threads:
        t.join(30)
    assert len(commits) == 4


def test_claims_one_after_another_keep_one_connection(engine, rows):
    checkouts = []
    sa.event.listen(engine, "checkout", lambda *args: checkouts.append(1))
    batcher = ClaimBatcher(engine, max_batch=16)
    for i, host in enumerate(HOSTS):
        batcher.claim([_claim(rows[host], i)])
    assert len(checkouts) == 1
    batcher.close()
    assert len(allocation_rows(engine)) == 4


def test_a_repeated_lone_claim_keeps_the_connection(engine, rows):
    """A consumer placed already is the request's answer, not a database
    failure: the kept connection is not given up for it."""
    checkouts = []
    sa.event.listen(engine, "checkout", lambda *args: checkouts.append(1))
    batcher = ClaimBatcher(engine, max_batch=16)
    batcher.claim([_claim(rows["h1"], 0)])
    with pytest.raises(ConsumerExists):
        batcher.claim([_claim(rows["h2"], 0)])
    batcher.claim([_claim(rows["h3"], 1)])
    assert len(checkouts) == 1
    batcher.close()
    assert {a.consumer_uuid for a in allocation_rows(engine)} == {
        _uuid(0), _uuid(1)}
