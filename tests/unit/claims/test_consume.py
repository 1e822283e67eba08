"""The claim: generation-checked UPDATEs and the allocation rows, all or
nothing; replaced claims give back their room in the same transaction."""
from __future__ import annotations

import pytest

from scheduler.claims import consume
from scheduler.claims.refusals import ConsumerExists
from scheduler.claims.refusals import NoRoom
from scheduler.hosts.planned import ClaimConflict
from tests.unit.claims.conftest import C1
from tests.unit.claims.conftest import C2
from tests.unit.claims.conftest import C3
from tests.unit.claims.conftest import C4
from tests.unit.claims.conftest import C5
from tests.unit.claims.conftest import claim_on
from tests.unit.claims.conftest import consumers
from tests.unit.claims.conftest import usage_of
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import bump_generation
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node


def test_claim_updates_usage_generation_and_writes_allocation(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1, project_id="p",
                                 user_id="u", group_uuid=C3)])
    assert usage_of(engine, "h1") == {
        "vcpus_used": 2, "memory_mb_used": 1024, "local_gb_used": 10,
        "free_ram_mb": 8192 - 1024, "free_disk_gb": 90, "running_vms": 1,
        "generation": 1}
    [alloc] = allocation_rows(engine)
    assert (alloc.consumer_uuid, alloc.compute_node_id, alloc.project_id,
            alloc.user_id, alloc.group_uuid, alloc.vcpus, alloc.memory_mb,
            alloc.disk_gb) == (C1, nodes["h1"].id, "p", "u", C3, 2, 1024, 10)
    assert alloc.created_at is not None
    # the other node is untouched
    assert usage_of(engine, "h2")["generation"] == 0


def test_claims_on_one_node_are_summed_and_bump_generation_once(engine,
                                                                nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h1"], C2)])
    usage = usage_of(engine, "h1")
    assert (usage["vcpus_used"], usage["memory_mb_used"],
            usage["running_vms"], usage["generation"]) == (4, 2048, 2, 1)
    assert len(allocation_rows(engine)) == 2


def test_claims_on_several_nodes(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h2"], C2)])
    assert usage_of(engine, "h1")["generation"] == 1
    assert usage_of(engine, "h2")["generation"] == 1
    assert {a.consumer_uuid: a.compute_node_id
            for a in allocation_rows(engine)} == {
        C1: nodes["h1"].id, C2: nodes["h2"].id}


def test_claim_with_a_moved_generation_conflicts_and_writes_nothing(engine,
                                                                    nodes):
    bump_generation(engine, "h1")
    before = usage_of(engine, "h1")
    with pytest.raises(ClaimConflict) as info:
        consume.claim(engine, [claim_on(nodes["h1"], C1)])
    assert info.value.node_id == nodes["h1"].id
    assert usage_of(engine, "h1") == before
    assert allocation_rows(engine) == []


def test_conflict_on_one_node_rolls_back_the_others(engine, nodes):
    bump_generation(engine, "h2")
    with pytest.raises(ClaimConflict) as info:
        consume.claim(engine, [claim_on(nodes["h1"], C1),
                              claim_on(nodes["h2"], C2)])
    assert info.value.node_id == nodes["h2"].id
    assert usage_of(engine, "h1")["generation"] == 0
    assert usage_of(engine, "h1")["vcpus_used"] == 0
    assert allocation_rows(engine) == []


def test_second_claim_with_the_same_stale_generation_conflicts(engine,
                                                               nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    with pytest.raises(ClaimConflict):
        consume.claim(engine, [claim_on(nodes["h1"], C2)])
    assert len(allocation_rows(engine)) == 1


def test_claim_on_a_deleted_node_conflicts(engine, nodes):
    set_node(engine, "h1", deleted=nodes["h1"].id)
    with pytest.raises(ClaimConflict):
        consume.claim(engine, [claim_on(nodes["h1"], C1)])
    assert allocation_rows(engine) == []


def test_duplicate_consumer_raises_and_writes_nothing(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    h1, h2 = usage_of(engine, "h1"), usage_of(engine, "h2")
    with pytest.raises(ConsumerExists):
        consume.claim(engine, [claim_on(node_row(engine, "h2"), C1)])
    assert usage_of(engine, "h1") == h1
    assert usage_of(engine, "h2") == h2      # the UPDATE was rolled back
    assert [a.consumer_uuid for a in allocation_rows(engine)] == [C1]


def test_duplicate_consumer_within_one_claim(engine, nodes):
    with pytest.raises(ConsumerExists):
        consume.claim(engine, [claim_on(nodes["h1"], C1),
                              claim_on(nodes["h2"], C1)])
    assert allocation_rows(engine) == []
    assert usage_of(engine, "h1")["generation"] == 0
    assert usage_of(engine, "h2")["generation"] == 0


def test_claim_in_says_a_placed_consumer_exists(engine, nodes):
    """Inside a caller's transaction (a stack's) too: the duplicate key
    arrives as ConsumerExists, and the caller's rollback undoes the rest."""
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    h2 = node_row(engine, "h2")
    with pytest.raises(ConsumerExists), engine.begin() as conn:
        consume.claim_in(conn, [claim_on(h2, C1)])
    assert usage_of(engine, "h2")["generation"] == h2.generation
    assert [a.consumer_uuid for a in allocation_rows(engine)] == [C1]


def test_a_claim_of_nothing_writes_nothing(engine, nodes):
    consume.claim(engine, [])
    assert allocation_rows(engine) == []
    assert usage_of(engine, "h1")["generation"] == 0


def test_replace_releases_the_old_claims_in_the_same_transaction(engine,
                                                                 nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1, vcpus=2, memory_mb=1024,
                                 disk_gb=10)])
    h1_gen = usage_of(engine, "h1")["generation"]
    consume.claim(engine, [claim_on(node_row(engine, "h2"), C2, vcpus=3,
                                 memory_mb=2048, disk_gb=20)],
                 replace=[C1])
    assert consumers(engine) == [C2]
    h1, h2 = usage_of(engine, "h1"), usage_of(engine, "h2")
    assert (h1["vcpus_used"], h1["memory_mb_used"], h1["local_gb_used"],
            h1["free_ram_mb"], h1["free_disk_gb"], h1["running_vms"]) == (
        0, 0, 0, 8192, 100, 0)
    assert h1["generation"] == h1_gen + 1
    assert (h2["vcpus_used"], h2["memory_mb_used"], h2["local_gb_used"],
            h2["running_vms"]) == (3, 2048, 20, 1)


def test_replace_the_same_consumer_moves_its_claim(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    consume.claim(engine, [claim_on(node_row(engine, "h2"), C1)],
                 replace=[C1])
    [alloc] = allocation_rows(engine)
    assert alloc.compute_node_id == nodes["h2"].id
    assert usage_of(engine, "h1")["vcpus_used"] == 0
    assert usage_of(engine, "h2")["vcpus_used"] == 2


def test_replace_on_the_same_node(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h1"], C2)])
    consume.claim(engine, [claim_on(node_row(engine, "h1"), C1),
                          claim_on(node_row(engine, "h1"), C3)],
                 replace=[C1, C2])
    assert consumers(engine) == [C1, C3]
    usage = usage_of(engine, "h1")
    assert (usage["vcpus_used"], usage["memory_mb_used"],
            usage["running_vms"]) == (4, 2048, 2)


def test_a_replaced_claim_makes_room_on_a_full_node(engine, nodes):
    """The claims a request replaces are given back before its new ones are
    judged: a full node takes the same consumers again, once."""
    consume.claim(engine, [claim_on(nodes["h1"], C1, memory_mb=4096),
                          claim_on(nodes["h1"], C2, memory_mb=4096)])
    before = usage_of(engine, "h1")
    assert before["free_ram_mb"] == 0
    consume.claim(engine, [claim_on(node_row(engine, "h1"), C1, memory_mb=4096),
                          claim_on(node_row(engine, "h1"), C3, memory_mb=4096)],
                 replace=[C1, C2])
    assert consumers(engine) == [C1, C3]
    after = usage_of(engine, "h1")
    assert after == {**before, "generation": before["generation"] + 1}


def test_a_replaced_claim_makes_room_for_no_more_than_it_held(engine,
                                                             nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1, memory_mb=4096),
                          claim_on(nodes["h1"], C2, memory_mb=4096)])
    before = usage_of(engine, "h1")
    with pytest.raises(NoRoom):
        consume.claim(engine, [claim_on(node_row(engine, "h1"), C1,
                                     memory_mb=5120)], replace=[C1])
    assert consumers(engine) == [C1, C2]
    assert usage_of(engine, "h1") == before


def test_replace_unknown_consumers_is_harmless(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)], replace=[C4, C5])
    assert consumers(engine) == [C1]
    assert usage_of(engine, "h1")["vcpus_used"] == 2


def test_a_failed_replacing_claim_leaves_the_old_claims(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    bump_generation(engine, "h2")
    before = {h: usage_of(engine, h) for h in ("h1", "h2")}
    with pytest.raises(ClaimConflict):
        # planned against h2's old generation
        consume.claim(engine, [claim_on(nodes["h2"], C2)], replace=[C1])
    assert consumers(engine) == [C1]
    assert {h: usage_of(engine, h) for h in ("h1", "h2")} == before
