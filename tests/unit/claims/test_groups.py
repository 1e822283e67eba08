"""Server groups with a hard policy, kept by the claim: anti-affinity per
host, affinity to one host, a moving member counted on both its hosts."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.claims import moves
from scheduler.claims.groups import GroupRule
from scheduler.claims.refusals import GroupConflict
from scheduler.db import allocations
from scheduler.db import models
from scheduler.hosts.planned import ClaimConflict
from tests.unit.claims.conftest import add_node
from tests.unit.claims.conftest import C1
from tests.unit.claims.conftest import C2
from tests.unit.claims.conftest import C3
from tests.unit.claims.conftest import C4
from tests.unit.claims.conftest import claim_on
from tests.unit.claims.conftest import consumers
from tests.unit.claims.conftest import G
from tests.unit.claims.conftest import G2
from tests.unit.claims.conftest import member
from tests.unit.claims.conftest import usage_of
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import node_row

ANTI = GroupRule(G, "anti-affinity")
AFF = GroupRule(G, "affinity")


def _group_rows(engine):
    t = models.claim_groups
    with engine.connect() as conn:
        return {r.uuid: r.generation for r in conn.execute(sa.select(t))}


def test_anti_affinity_refuses_a_second_member_on_the_same_host(engine,
                                                                nodes):
    consume.claim(engine, [member(engine, "h1", C1)], group=ANTI)
    before = {h: usage_of(engine, h) for h in ("h1", "h2")}
    groups = _group_rows(engine)
    with pytest.raises(GroupConflict) as info:
        consume.claim(engine, [member(engine, "h1", C2)], group=ANTI)
    assert isinstance(info.value, ClaimConflict)
    assert G in str(info.value) and "h1" in str(info.value)
    assert consumers(engine) == [C1]
    assert {h: usage_of(engine, h) for h in ("h1", "h2")} == before
    assert _group_rows(engine) == groups     # the lock's bump rolled back


def test_anti_affinity_refuses_two_members_of_one_claim_on_a_host(engine,
                                                                  nodes):
    with pytest.raises(GroupConflict):
        consume.claim(engine, [member(engine, "h1", C1),
                              member(engine, "h1", C2)], group=ANTI)
    assert allocation_rows(engine) == []
    assert usage_of(engine, "h1")["generation"] == 0
    assert usage_of(engine, "h1")["vcpus_used"] == 0
    assert _group_rows(engine) == {}


def test_anti_affinity_allows_other_hosts(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1)], group=ANTI)
    consume.claim(engine, [member(engine, "h2", C2)], group=ANTI)
    assert consumers(engine) == [C1, C2]
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h1": 1, "h2": 1}


def test_anti_affinity_spread_in_one_claim(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1),
                          member(engine, "h2", C2)], group=ANTI)
    assert consumers(engine) == [C1, C2]


def test_anti_affinity_ignores_other_groups_and_non_members(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1, group=G2)],
                 group=GroupRule(G2, "anti-affinity"))
    consume.claim(engine, [claim_on(node_row(engine, "h1"), C2)])
    consume.claim(engine, [member(engine, "h1", C3)], group=ANTI)
    assert consumers(engine) == [C1, C2, C3]


def test_anti_affinity_max_per_host_two(engine, nodes):
    rule = GroupRule(G, "anti-affinity", max_per_host=2)
    consume.claim(engine, [member(engine, "h1", C1)], group=rule)
    consume.claim(engine, [member(engine, "h1", C2)], group=rule)
    before = usage_of(engine, "h1")
    with pytest.raises(GroupConflict) as info:
        consume.claim(engine, [member(engine, "h1", C3)], group=rule)
    assert "3 members" in str(info.value) and "at most 2" in str(info.value)
    assert usage_of(engine, "h1") == before
    assert consumers(engine) == [C1, C2]
    # the third one fits elsewhere
    consume.claim(engine, [member(engine, "h2", C3)], group=rule)
    assert consumers(engine) == [C1, C2, C3]


def test_anti_affinity_max_per_host_two_within_one_claim(engine, nodes):
    rule = GroupRule(G, "anti-affinity", max_per_host=2)
    consume.claim(engine, [member(engine, "h1", C1),
                          member(engine, "h1", C2)], group=rule)
    with pytest.raises(GroupConflict):
        consume.claim(engine, [member(engine, "h1", C3),
                              member(engine, "h2", C4)], group=rule)
    assert consumers(engine) == [C1, C2]
    assert usage_of(engine, "h2")["generation"] == 0


def test_affinity_refuses_a_member_on_a_second_host(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1)], group=AFF)
    before = {h: usage_of(engine, h) for h in ("h1", "h2")}
    with pytest.raises(GroupConflict) as info:
        consume.claim(engine, [member(engine, "h2", C2)], group=AFF)
    assert "affinity" in str(info.value)
    assert consumers(engine) == [C1]
    assert {h: usage_of(engine, h) for h in ("h1", "h2")} == before


def test_affinity_refuses_a_claim_split_over_two_hosts(engine, nodes):
    with pytest.raises(GroupConflict):
        consume.claim(engine, [member(engine, "h1", C1),
                              member(engine, "h2", C2)], group=AFF)
    assert allocation_rows(engine) == []
    assert usage_of(engine, "h1")["generation"] == 0
    assert usage_of(engine, "h2")["generation"] == 0


def test_affinity_allows_the_same_host(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1),
                          member(engine, "h1", C2)], group=AFF)
    consume.claim(engine, [member(engine, "h1", C3)], group=AFF)
    assert consumers(engine) == [C1, C2, C3]
    assert usage_of(engine, "h1")["running_vms"] == 3


def test_group_members_are_counted_per_host_across_its_nodes(engine,
                                                             nodes):
    other = add_node(engine, "h1", "h1-b")
    consume.claim(engine, [member(engine, "h1", C1)], group=ANTI)
    # a different node, but the same host: anti-affinity refuses
    with pytest.raises(GroupConflict):
        consume.claim(engine, [claim_on(other, C2, group_uuid=G)], group=ANTI)
    assert consumers(engine) == [C1]
    assert usage_of(engine, "h1-b")["generation"] == 0
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h1": 1}
    # ... and affinity allows it (one host)
    rule = GroupRule(G2, "affinity")
    consume.claim(engine, [member(engine, "h1", C3, group=G2)], group=rule)
    consume.claim(engine, [claim_on(other, C4, group_uuid=G2)], group=rule)
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G2) == {"h1": 2}


def test_a_moving_member_counts_on_both_its_hosts_for_anti_affinity(
        engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1)], group=ANTI)
    consume.claim(engine, [member(engine, "h2", C1)], group=ANTI, move=[C1])
    # Until the move is confirmed it may be reverted, back onto h1.
    for host in ("h1", "h2"):
        with pytest.raises(GroupConflict):
            consume.claim(engine, [member(engine, host, C2)], group=ANTI)
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h1": 1, "h2": 1}
        assert allocations.member_hosts(conn, G, []) == {"h1": 1, "h2": 1}
    assert moves.revert_move(engine, [C1]) == 1
    assert consumers(engine) == [C1]
    consume.claim(engine, [member(engine, "h2", C2)], group=ANTI)


def test_a_moving_member_counts_on_both_its_hosts_for_affinity(engine,
                                                               nodes):
    consume.claim(engine, [member(engine, "h1", C1)], group=AFF)
    consume.claim(engine, [member(engine, "h2", C1)], group=AFF, move=[C1])
    with pytest.raises(GroupConflict):
        consume.claim(engine, [member(engine, "h2", C2)], group=AFF)
    assert moves.confirm_move(engine, [C1]) == 1
    consume.claim(engine, [member(engine, "h2", C2)], group=AFF)
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h2": 2}


def test_a_move_on_one_host_counts_the_member_there_once(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1)], group=ANTI)
    consume.claim(engine, [member(engine, "h1", C1, vcpus=3)], group=ANTI,
                 move=[C1])
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h1": 1}


def test_claim_group_row_created_once_and_bumped(engine, nodes):
    assert _group_rows(engine) == {}
    consume.claim(engine, [member(engine, "h1", C1)], group=ANTI)
    assert _group_rows(engine) == {G: 1}
    consume.claim(engine, [member(engine, "h2", C2)], group=ANTI)
    assert _group_rows(engine) == {G: 2}
    # without a rule the group row is not touched
    consume.claim(engine, [member(engine, "h2", C3)])
    assert _group_rows(engine) == {G: 2}


def test_replaced_member_no_longer_counts_for_the_group(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1)], group=ANTI)
    # C1 moves out of h1's group count within the same transaction
    consume.claim(engine, [member(engine, "h1", C2)], group=ANTI,
                 replace=[C1])
    assert consumers(engine) == [C2]


def test_a_group_conflict_leaves_the_replaced_claims(engine, nodes):
    consume.claim(engine, [member(engine, "h1", C1),
                          member(engine, "h2", C2)], group=ANTI)
    before = {h: usage_of(engine, h) for h in ("h1", "h2")}
    with pytest.raises(GroupConflict):
        # replacing C1 frees h1 but not h2
        consume.claim(engine, [member(engine, "h2", C3)], group=ANTI,
                     replace=[C1])
    assert consumers(engine) == [C1, C2]
    assert {h: usage_of(engine, h) for h in ("h1", "h2")} == before
