"""Moves: a move is claimed against the claim it was planned on."""
from __future__ import annotations

import pytest

from scheduler.claims import consume
from scheduler.claims.refusals import ConsumerExists
from tests.unit.claims.conftest import C1
from tests.unit.claims.conftest import claim_on
from tests.unit.claims.conftest import node_now
from tests.unit.claims.conftest import usage_of
from tests.unit.fakes import allocation_rows


def test_a_move_planned_on_a_claim_that_moved_since_writes_nothing(
        engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    seen = {C1: (nodes["h1"].id, None)}
    # A twin of the request moved C1 to h2 after this one read its claim.
    consume.claim(engine, [claim_on(node_now(engine, "h2"), C1)], move=[C1],
                 moving_from=seen)
    before = {h: usage_of(engine, h) for h in ("h1", "h2")}
    with pytest.raises(ConsumerExists):
        consume.claim(engine, [claim_on(node_now(engine, "h2"), C1, vcpus=1)],
                     move=[C1], moving_from=seen)
    assert {h: usage_of(engine, h) for h in ("h1", "h2")} == before
    [row] = allocation_rows(engine)
    assert (row.compute_node_id, row.source_node_id) == (
        nodes["h2"].id, nodes["h1"].id)
