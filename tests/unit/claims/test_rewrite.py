"""The second look for claims a concurrent rewrite replaced
(``rewrite.until_none_missed``): it follows them, and it ends."""
from __future__ import annotations

from scheduler.claims import consume
from scheduler.claims import rewrite
from scheduler.db import models
from tests.unit.claims.conftest import C1
from tests.unit.claims.conftest import C2
from tests.unit.claims.conftest import C3
from tests.unit.claims.conftest import claim_on
from tests.unit.fakes import allocation_rows


def _writer(script):
    """An act for rewrite.until_none_missed that, on its n-th call, runs
    ``script[n](conn, uuids)`` (what it returns: the rows it acted on),
    and fails past the end of ``script``, not loop for good."""
    calls = []

    def act(conn, uuids):
        assert len(calls) < len(script), f"act called again: {calls}"
        calls.append(sorted(uuids))
        return script[len(calls) - 1](conn, uuids)
    act.calls = calls
    return act


def _misses(conn, uuids):
    return []


def _missed_behind_a_move_end(conn, uuids):
    """A statement that waited for a move's end and lost: the claim's row
    is replaced by one with a new id, the statement acts on nothing."""
    a = models.allocations
    conn.execute(a.update().where(a.c.consumer_uuid.in_(uuids))
                 .values(id=a.c.id + 1000))
    return []


def test_a_second_look_that_the_writer_disagrees_with_stops(engine, nodes):
    """A writer that does not act on a claim its second look finds (a
    look with another condition than the writer's) is run once more for
    it, and not again when the look finds the same claim: the loop ends
    rather than spin in the transaction."""
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    act = _writer([_misses, _misses])
    with engine.begin() as conn:
        assert rewrite.until_none_missed(conn, [C1, C2], act) == []
    assert act.calls == [[C1, C2], [C1]]


def test_a_second_look_follows_a_claim_re_inserted_meanwhile(engine, nodes):
    """A consumer's claim replaced (a new row) again between the second
    look and the writer's statement (another move's end) is looked for
    and acted on once more: each round found a claim no look found
    before."""
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h1"], C2)])
    act = _writer([lambda conn, uuids: rewrite.delete_consumers(conn, [C2]),
                   _missed_behind_a_move_end, _missed_behind_a_move_end,
                   rewrite.delete_consumers])
    with engine.begin() as conn:
        rows = rewrite.until_none_missed(conn, [C1, C2, C3], act)
    assert sorted(r.consumer_uuid for r in rows) == [C1, C2]
    assert act.calls == [[C1, C2, C3], [C1], [C1], [C1]]
    assert allocation_rows(engine) == []
