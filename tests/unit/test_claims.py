"""Claims and releases against a real SQLite database file."""
from __future__ import annotations

import pytest

from scheduler import claims
from scheduler.claims import Claim
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import bump_generation
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node

C1 = "aaaaaaaa-0000-4000-8000-000000000001"
C2 = "aaaaaaaa-0000-4000-8000-000000000002"
C3 = "aaaaaaaa-0000-4000-8000-000000000003"

USAGE = ("vcpus_used", "memory_mb_used", "local_gb_used", "free_ram_mb",
         "free_disk_gb", "running_vms", "generation")


@pytest.fixture
def nodes(register, engine):
    register(node("h1", vcpus=8, memory_mb=8192, local_gb=100),
             node("h2", vcpus=8, memory_mb=8192, local_gb=100))
    return {h: node_row(engine, h) for h in ("h1", "h2")}


def _claim(row, consumer, vcpus=2, memory_mb=1024, disk_gb=10, **kw):
    return Claim(consumer_uuid=consumer, node_id=row.id, host=row.host,
                 generation=row.generation, vcpus=vcpus,
                 memory_mb=memory_mb, disk_gb=disk_gb, **kw)


def _usage(engine, host):
    row = node_row(engine, host)
    return {k: getattr(row, k) for k in USAGE}


def test_claim_updates_usage_generation_and_writes_allocation(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1, project_id="p",
                                 user_id="u", group_uuid=C3)])
    assert _usage(engine, "h1") == {
        "vcpus_used": 2, "memory_mb_used": 1024, "local_gb_used": 10,
        "free_ram_mb": 8192 - 1024, "free_disk_gb": 90, "running_vms": 1,
        "generation": 1}
    [alloc] = allocation_rows(engine)
    assert (alloc.consumer_uuid, alloc.compute_node_id, alloc.project_id,
            alloc.user_id, alloc.group_uuid, alloc.vcpus, alloc.memory_mb,
            alloc.disk_gb) == (C1, nodes["h1"].id, "p", "u", C3, 2, 1024, 10)
    assert alloc.created_at is not None
    # the other node is untouched
    assert _usage(engine, "h2")["generation"] == 0


def test_claims_on_one_node_are_summed_and_bump_generation_once(engine,
                                                                nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h1"], C2)])
    usage = _usage(engine, "h1")
    assert (usage["vcpus_used"], usage["memory_mb_used"],
            usage["running_vms"], usage["generation"]) == (4, 2048, 2, 1)
    assert len(allocation_rows(engine)) == 2


def test_claims_on_several_nodes(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h2"], C2)])
    assert _usage(engine, "h1")["generation"] == 1
    assert _usage(engine, "h2")["generation"] == 1
    assert {a.consumer_uuid: a.compute_node_id
            for a in allocation_rows(engine)} == {
        C1: nodes["h1"].id, C2: nodes["h2"].id}


def test_claim_with_a_moved_generation_conflicts_and_writes_nothing(engine,
                                                                    nodes):
    bump_generation(engine, "h1")
    before = _usage(engine, "h1")
    with pytest.raises(claims.ClaimConflict) as info:
        claims.claim(engine, [_claim(nodes["h1"], C1)])
    assert info.value.node_id == nodes["h1"].id
    assert _usage(engine, "h1") == before
    assert allocation_rows(engine) == []


def test_conflict_on_one_node_rolls_back_the_others(engine, nodes):
    bump_generation(engine, "h2")
    with pytest.raises(claims.ClaimConflict) as info:
        claims.claim(engine, [_claim(nodes["h1"], C1),
                              _claim(nodes["h2"], C2)])
    assert info.value.node_id == nodes["h2"].id
    assert _usage(engine, "h1")["generation"] == 0
    assert _usage(engine, "h1")["vcpus_used"] == 0
    assert allocation_rows(engine) == []


def test_second_claim_with_the_same_stale_generation_conflicts(engine,
                                                               nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    with pytest.raises(claims.ClaimConflict):
        claims.claim(engine, [_claim(nodes["h1"], C2)])
    assert len(allocation_rows(engine)) == 1


def test_claim_on_a_deleted_node_conflicts(engine, nodes):
    set_node(engine, "h1", deleted=nodes["h1"].id)
    with pytest.raises(claims.ClaimConflict):
        claims.claim(engine, [_claim(nodes["h1"], C1)])
    assert allocation_rows(engine) == []


def test_duplicate_consumer_raises_and_writes_nothing(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    h1, h2 = _usage(engine, "h1"), _usage(engine, "h2")
    with pytest.raises(claims.ConsumerExists):
        claims.claim(engine, [_claim(node_row(engine, "h2"), C1)])
    assert _usage(engine, "h1") == h1
    assert _usage(engine, "h2") == h2      # the UPDATE was rolled back
    assert [a.consumer_uuid for a in allocation_rows(engine)] == [C1]


def test_duplicate_consumer_within_one_claim(engine, nodes):
    with pytest.raises(claims.ConsumerExists):
        claims.claim(engine, [_claim(nodes["h1"], C1),
                              _claim(nodes["h2"], C1)])
    assert allocation_rows(engine) == []
    assert _usage(engine, "h1")["generation"] == 0
    assert _usage(engine, "h2")["generation"] == 0


def test_release_gives_usage_back_once(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h1"], C2)])
    assert claims.release(engine, [C1]) == 1
    usage = _usage(engine, "h1")
    assert (usage["vcpus_used"], usage["memory_mb_used"],
            usage["local_gb_used"], usage["free_ram_mb"],
            usage["free_disk_gb"], usage["running_vms"]) == (
        2, 1024, 10, 8192 - 1024, 90, 1)
    assert usage["generation"] == 2
    assert [a.consumer_uuid for a in allocation_rows(engine)] == [C2]

    # idempotent: the second release changes nothing
    assert claims.release(engine, [C1]) == 0
    assert _usage(engine, "h1") == usage


def test_release_across_nodes(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h2"], C2)])
    assert claims.release(engine, [C1, C2, C3]) == 2
    for host in ("h1", "h2"):
        usage = _usage(engine, host)
        assert (usage["vcpus_used"], usage["memory_mb_used"],
                usage["local_gb_used"], usage["running_vms"]) == (0, 0, 0, 0)
        assert usage["free_ram_mb"] == 8192 and usage["free_disk_gb"] == 100
    assert allocation_rows(engine) == []


def test_release_unknown_or_nothing(engine, nodes):
    assert claims.release(engine, []) == 0
    assert claims.release(engine, [C3]) == 0
    assert _usage(engine, "h1")["generation"] == 0


def test_released_consumer_can_claim_again(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    claims.release(engine, [C1])
    claims.claim(engine, [_claim(node_row(engine, "h2"), C1)])
    [alloc] = allocation_rows(engine)
    assert alloc.compute_node_id == nodes["h2"].id


def test_placements(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1, vcpus=3)])
    held = claims.placements(engine, [C1, C2])
    assert set(held) == {C1}
    row = held[C1]
    assert (row.host, row.hypervisor_hostname, row.node_uuid, row.vcpus,
            row.memory_mb, row.disk_gb) == (
        "h1", "h1", nodes["h1"].uuid, 3, 1024, 10)
    assert claims.placements(engine, [C2]) == {}
