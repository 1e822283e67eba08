"""Claims and releases against a real SQLite database file."""
from __future__ import annotations

import datetime
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from scheduler import claims
from scheduler.claims import Claim
from scheduler.claims import GroupRule
from scheduler.db import clock
from scheduler.db import models
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
    n = models.compute_nodes
    with engine.connect() as conn:
        row = conn.execute(sa.select(n).where(
            n.c.hypervisor_hostname == host, n.c.deleted == 0)).one()
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


def test_claim_in_says_a_placed_consumer_exists(engine, nodes):
    """Inside a caller's transaction (a stack's) too: the duplicate key
    arrives as ConsumerExists, and the caller's rollback undoes the rest."""
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    h2 = node_row(engine, "h2")
    with pytest.raises(claims.ConsumerExists), engine.begin() as conn:
        claims.claim_in(conn, [_claim(h2, C1)])
    assert _usage(engine, "h2")["generation"] == h2.generation
    assert [a.consumer_uuid for a in allocation_rows(engine)] == [C1]


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


def _writer(script):
    """An act for claims._until_none_missed that, on its n-th call, runs
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
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    act = _writer([_misses, _misses])
    with engine.begin() as conn:
        assert claims._until_none_missed(conn, [C1, C2], act) == []
    assert act.calls == [[C1, C2], [C1]]


def test_a_second_look_follows_a_claim_re_inserted_meanwhile(engine, nodes):
    """A consumer's claim replaced (a new row) again between the second
    look and the writer's statement (another move's end) is looked for
    and acted on once more: each round found a claim no look found
    before."""
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h1"], C2)])
    act = _writer([lambda conn, uuids: claims._delete_consumers(conn, [C2]),
                   _missed_behind_a_move_end, _missed_behind_a_move_end,
                   claims._delete_consumers])
    with engine.begin() as conn:
        rows = claims._until_none_missed(conn, [C1, C2, C3], act)
    assert sorted(r.consumer_uuid for r in rows) == [C1, C2]
    assert act.calls == [[C1, C2, C3], [C1], [C1], [C1]]
    assert allocation_rows(engine) == []


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


# --- server groups, replacement, expiry -----------------------------------

G = "bbbbbbbb-0000-4000-8000-000000000001"
G2 = "bbbbbbbb-0000-4000-8000-000000000002"
C4 = "aaaaaaaa-0000-4000-8000-000000000004"
C5 = "aaaaaaaa-0000-4000-8000-000000000005"

ANTI = GroupRule(G, "anti-affinity")
AFF = GroupRule(G, "affinity")


def _node(engine, nodename):
    """The node named ``nodename`` as it is now."""
    n = models.compute_nodes
    with engine.connect() as conn:
        return conn.execute(sa.select(n).where(
            n.c.hypervisor_hostname == nodename, n.c.deleted == 0)).one()


def _member(engine, nodename, consumer, group=G, **kw):
    """A claim of a group member on the node ``nodename`` as it is now."""
    return _claim(_node(engine, nodename), consumer, group_uuid=group, **kw)


def _group_rows(engine):
    t = models.claim_groups
    with engine.connect() as conn:
        return {r.uuid: r.generation for r in conn.execute(sa.select(t))}


def _consumers(engine):
    return sorted(a.consumer_uuid for a in allocation_rows(engine))


def _add_node(engine, host, nodename, vcpus=8, memory_mb=8192,
              local_gb=100):
    """A second hypervisor node on an existing host (nova: one service,
    many nodes)."""
    n = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(n.insert().values(
            uuid=str(uuidlib.uuid4()), host=host,
            hypervisor_hostname=nodename, vcpus=vcpus, memory_mb=memory_mb,
            local_gb=local_gb, vcpus_used=0, memory_mb_used=0,
            local_gb_used=0, free_ram_mb=memory_mb, free_disk_gb=local_gb,
            running_vms=0, cpu_allocation_ratio=1.0,
            ram_allocation_ratio=1.0, disk_allocation_ratio=1.0,
            generation=0, deleted=0))
    with engine.connect() as conn:
        return conn.execute(sa.select(n).where(
            n.c.hypervisor_hostname == nodename)).one()


def _expires_at(engine, consumer):
    a = models.allocations
    with engine.connect() as conn:
        return conn.execute(sa.select(a.c.expires_at).where(
            a.c.consumer_uuid == consumer)).scalar_one()


def _db_now(engine):
    with engine.connect() as conn:
        return clock.db_time(conn)


def _set_expires_at(engine, consumer, value):
    a = models.allocations
    with engine.begin() as conn:
        conn.execute(a.update().where(a.c.consumer_uuid == consumer)
                     .values(expires_at=value))


def test_anti_affinity_refuses_a_second_member_on_the_same_host(engine,
                                                                nodes):
    claims.claim(engine, [_member(engine, "h1", C1)], group=ANTI)
    before = {h: _usage(engine, h) for h in ("h1", "h2")}
    groups = _group_rows(engine)
    with pytest.raises(claims.GroupConflict) as info:
        claims.claim(engine, [_member(engine, "h1", C2)], group=ANTI)
    assert isinstance(info.value, claims.ClaimConflict)
    assert G in str(info.value) and "h1" in str(info.value)
    assert _consumers(engine) == [C1]
    assert {h: _usage(engine, h) for h in ("h1", "h2")} == before
    assert _group_rows(engine) == groups     # the lock's bump rolled back


def test_anti_affinity_refuses_two_members_of_one_claim_on_a_host(engine,
                                                                  nodes):
    with pytest.raises(claims.GroupConflict):
        claims.claim(engine, [_member(engine, "h1", C1),
                              _member(engine, "h1", C2)], group=ANTI)
    assert allocation_rows(engine) == []
    assert _usage(engine, "h1")["generation"] == 0
    assert _usage(engine, "h1")["vcpus_used"] == 0
    assert _group_rows(engine) == {}


def test_anti_affinity_allows_other_hosts(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1)], group=ANTI)
    claims.claim(engine, [_member(engine, "h2", C2)], group=ANTI)
    assert _consumers(engine) == [C1, C2]
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G) == {"h1": 1, "h2": 1}


def test_anti_affinity_spread_in_one_claim(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1),
                          _member(engine, "h2", C2)], group=ANTI)
    assert _consumers(engine) == [C1, C2]


def test_anti_affinity_ignores_other_groups_and_non_members(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1, group=G2)],
                 group=GroupRule(G2, "anti-affinity"))
    claims.claim(engine, [_claim(node_row(engine, "h1"), C2)])
    claims.claim(engine, [_member(engine, "h1", C3)], group=ANTI)
    assert _consumers(engine) == [C1, C2, C3]


def test_anti_affinity_max_per_host_two(engine, nodes):
    rule = GroupRule(G, "anti-affinity", max_per_host=2)
    claims.claim(engine, [_member(engine, "h1", C1)], group=rule)
    claims.claim(engine, [_member(engine, "h1", C2)], group=rule)
    before = _usage(engine, "h1")
    with pytest.raises(claims.GroupConflict) as info:
        claims.claim(engine, [_member(engine, "h1", C3)], group=rule)
    assert "3 members" in str(info.value) and "at most 2" in str(info.value)
    assert _usage(engine, "h1") == before
    assert _consumers(engine) == [C1, C2]
    # the third one fits elsewhere
    claims.claim(engine, [_member(engine, "h2", C3)], group=rule)
    assert _consumers(engine) == [C1, C2, C3]


def test_anti_affinity_max_per_host_two_within_one_claim(engine, nodes):
    rule = GroupRule(G, "anti-affinity", max_per_host=2)
    claims.claim(engine, [_member(engine, "h1", C1),
                          _member(engine, "h1", C2)], group=rule)
    with pytest.raises(claims.GroupConflict):
        claims.claim(engine, [_member(engine, "h1", C3),
                              _member(engine, "h2", C4)], group=rule)
    assert _consumers(engine) == [C1, C2]
    assert _usage(engine, "h2")["generation"] == 0


def test_affinity_refuses_a_member_on_a_second_host(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1)], group=AFF)
    before = {h: _usage(engine, h) for h in ("h1", "h2")}
    with pytest.raises(claims.GroupConflict) as info:
        claims.claim(engine, [_member(engine, "h2", C2)], group=AFF)
    assert "affinity" in str(info.value)
    assert _consumers(engine) == [C1]
    assert {h: _usage(engine, h) for h in ("h1", "h2")} == before


def test_affinity_refuses_a_claim_split_over_two_hosts(engine, nodes):
    with pytest.raises(claims.GroupConflict):
        claims.claim(engine, [_member(engine, "h1", C1),
                              _member(engine, "h2", C2)], group=AFF)
    assert allocation_rows(engine) == []
    assert _usage(engine, "h1")["generation"] == 0
    assert _usage(engine, "h2")["generation"] == 0


def test_affinity_allows_the_same_host(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1),
                          _member(engine, "h1", C2)], group=AFF)
    claims.claim(engine, [_member(engine, "h1", C3)], group=AFF)
    assert _consumers(engine) == [C1, C2, C3]
    assert _usage(engine, "h1")["running_vms"] == 3


def test_group_members_are_counted_per_host_across_its_nodes(engine,
                                                             nodes):
    other = _add_node(engine, "h1", "h1-b")
    claims.claim(engine, [_member(engine, "h1", C1)], group=ANTI)
    # a different node, but the same host: anti-affinity refuses
    with pytest.raises(claims.GroupConflict):
        claims.claim(engine, [_claim(other, C2, group_uuid=G)], group=ANTI)
    assert _consumers(engine) == [C1]
    assert _usage(engine, "h1-b")["generation"] == 0
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G) == {"h1": 1}
    # ... and affinity allows it (one host)
    rule = GroupRule(G2, "affinity")
    claims.claim(engine, [_member(engine, "h1", C3, group=G2)], group=rule)
    claims.claim(engine, [_claim(other, C4, group_uuid=G2)], group=rule)
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G2) == {"h1": 2}


def test_group_hosts(engine, nodes):
    other = _add_node(engine, "h1", "h1-b")
    claims.claim(engine, [_member(engine, "h1", C1),
                          _claim(other, C2, group_uuid=G),
                          _member(engine, "h2", C3),
                          _member(engine, "h2", C4, group=G2),
                          _claim(_node(engine, "h2"), C5)])
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G) == {"h1": 2, "h2": 1}
        assert claims.group_hosts(conn, G2) == {"h2": 1}
        assert claims.group_hosts(conn, "no-such-group") == {}
    claims.release(engine, [C1, C3])
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G) == {"h1": 1}


def test_a_moving_member_counts_on_both_its_hosts_for_anti_affinity(
        engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1)], group=ANTI)
    claims.claim(engine, [_member(engine, "h2", C1)], group=ANTI, move=[C1])
    # Until the move is confirmed it may be reverted, back onto h1.
    for host in ("h1", "h2"):
        with pytest.raises(claims.GroupConflict):
            claims.claim(engine, [_member(engine, host, C2)], group=ANTI)
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G) == {"h1": 1, "h2": 1}
        assert claims.member_hosts(conn, G, []) == {"h1": 1, "h2": 1}
    assert claims.revert_move(engine, [C1]) == 1
    assert _consumers(engine) == [C1]
    claims.claim(engine, [_member(engine, "h2", C2)], group=ANTI)


def test_a_moving_member_counts_on_both_its_hosts_for_affinity(engine,
                                                               nodes):
    claims.claim(engine, [_member(engine, "h1", C1)], group=AFF)
    claims.claim(engine, [_member(engine, "h2", C1)], group=AFF, move=[C1])
    with pytest.raises(claims.GroupConflict):
        claims.claim(engine, [_member(engine, "h2", C2)], group=AFF)
    assert claims.confirm_move(engine, [C1]) == 1
    claims.claim(engine, [_member(engine, "h2", C2)], group=AFF)
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G) == {"h2": 2}


def test_a_move_on_one_host_counts_the_member_there_once(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1)], group=ANTI)
    claims.claim(engine, [_member(engine, "h1", C1, vcpus=3)], group=ANTI,
                 move=[C1])
    with engine.connect() as conn:
        assert claims.group_hosts(conn, G) == {"h1": 1}


def test_a_move_planned_on_a_claim_that_moved_since_writes_nothing(
        engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    seen = {C1: (nodes["h1"].id, None)}
    # A twin of the request moved C1 to h2 after this one read its claim.
    claims.claim(engine, [_claim(_node(engine, "h2"), C1)], move=[C1],
                 moving_from=seen)
    before = {h: _usage(engine, h) for h in ("h1", "h2")}
    with pytest.raises(claims.ConsumerExists):
        claims.claim(engine, [_claim(_node(engine, "h2"), C1, vcpus=1)],
                     move=[C1], moving_from=seen)
    assert {h: _usage(engine, h) for h in ("h1", "h2")} == before
    [row] = allocation_rows(engine)
    assert (row.compute_node_id, row.source_node_id) == (
        nodes["h2"].id, nodes["h1"].id)


def test_a_claim_of_nothing_writes_nothing(engine, nodes):
    claims.claim(engine, [])
    assert allocation_rows(engine) == []
    assert _usage(engine, "h1")["generation"] == 0


def test_consumer_hosts(engine, nodes):
    other = _add_node(engine, "h1", "h1-b")
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(other, C2),
                          _claim(_node(engine, "h2"), C3)])
    unknown = str(uuidlib.uuid4())
    with engine.connect() as conn:
        assert claims.consumer_hosts(conn, [C1, C2, C3, unknown, C1]) == {
            C1: ("h1",), C2: ("h1",), C3: ("h2",)}
        assert claims.consumer_hosts(conn, [C1, C3], exclude=[C3]) == {
            C1: ("h1",)}
        assert claims.consumer_hosts(conn, []) == {}
    claims.release(engine, [C1])
    with engine.connect() as conn:
        assert claims.consumer_hosts(conn, [C1, C2]) == {C2: ("h1",)}


def test_claim_group_row_created_once_and_bumped(engine, nodes):
    assert _group_rows(engine) == {}
    claims.claim(engine, [_member(engine, "h1", C1)], group=ANTI)
    assert _group_rows(engine) == {G: 1}
    claims.claim(engine, [_member(engine, "h2", C2)], group=ANTI)
    assert _group_rows(engine) == {G: 2}
    # without a rule the group row is not touched
    claims.claim(engine, [_member(engine, "h2", C3)])
    assert _group_rows(engine) == {G: 2}


def test_replace_releases_the_old_claims_in_the_same_transaction(engine,
                                                                 nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1, vcpus=2, memory_mb=1024,
                                 disk_gb=10)])
    h1_gen = _usage(engine, "h1")["generation"]
    claims.claim(engine, [_claim(node_row(engine, "h2"), C2, vcpus=3,
                                 memory_mb=2048, disk_gb=20)],
                 replace=[C1])
    assert _consumers(engine) == [C2]
    h1, h2 = _usage(engine, "h1"), _usage(engine, "h2")
    assert (h1["vcpus_used"], h1["memory_mb_used"], h1["local_gb_used"],
            h1["free_ram_mb"], h1["free_disk_gb"], h1["running_vms"]) == (
        0, 0, 0, 8192, 100, 0)
    assert h1["generation"] == h1_gen + 1
    assert (h2["vcpus_used"], h2["memory_mb_used"], h2["local_gb_used"],
            h2["running_vms"]) == (3, 2048, 20, 1)


def test_replace_the_same_consumer_moves_its_claim(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    claims.claim(engine, [_claim(node_row(engine, "h2"), C1)],
                 replace=[C1])
    [alloc] = allocation_rows(engine)
    assert alloc.compute_node_id == nodes["h2"].id
    assert _usage(engine, "h1")["vcpus_used"] == 0
    assert _usage(engine, "h2")["vcpus_used"] == 2


def test_replace_on_the_same_node(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h1"], C2)])
    claims.claim(engine, [_claim(node_row(engine, "h1"), C1),
                          _claim(node_row(engine, "h1"), C3)],
                 replace=[C1, C2])
    assert _consumers(engine) == [C1, C3]
    usage = _usage(engine, "h1")
    assert (usage["vcpus_used"], usage["memory_mb_used"],
            usage["running_vms"]) == (4, 2048, 2)


def test_a_replaced_claim_makes_room_on_a_full_node(engine, nodes):
    """The claims a request replaces are given back before its new ones are
    judged: a full node takes the same consumers again, once."""
    claims.claim(engine, [_claim(nodes["h1"], C1, memory_mb=4096),
                          _claim(nodes["h1"], C2, memory_mb=4096)])
    before = _usage(engine, "h1")
    assert before["free_ram_mb"] == 0
    claims.claim(engine, [_claim(node_row(engine, "h1"), C1, memory_mb=4096),
                          _claim(node_row(engine, "h1"), C3, memory_mb=4096)],
                 replace=[C1, C2])
    assert _consumers(engine) == [C1, C3]
    after = _usage(engine, "h1")
    assert after == {**before, "generation": before["generation"] + 1}


def test_a_replaced_claim_makes_room_for_no_more_than_it_held(engine,
                                                             nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1, memory_mb=4096),
                          _claim(nodes["h1"], C2, memory_mb=4096)])
    before = _usage(engine, "h1")
    with pytest.raises(claims.NoRoom):
        claims.claim(engine, [_claim(node_row(engine, "h1"), C1,
                                     memory_mb=5120)], replace=[C1])
    assert _consumers(engine) == [C1, C2]
    assert _usage(engine, "h1") == before


def test_replace_unknown_consumers_is_harmless(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)], replace=[C4, C5])
    assert _consumers(engine) == [C1]
    assert _usage(engine, "h1")["vcpus_used"] == 2


def test_a_failed_replacing_claim_leaves_the_old_claims(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    bump_generation(engine, "h2")
    before = {h: _usage(engine, h) for h in ("h1", "h2")}
    with pytest.raises(claims.ClaimConflict):
        # planned against h2's old generation
        claims.claim(engine, [_claim(nodes["h2"], C2)], replace=[C1])
    assert _consumers(engine) == [C1]
    assert {h: _usage(engine, h) for h in ("h1", "h2")} == before


def test_replaced_member_no_longer_counts_for_the_group(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1)], group=ANTI)
    # C1 moves out of h1's group count within the same transaction
    claims.claim(engine, [_member(engine, "h1", C2)], group=ANTI,
                 replace=[C1])
    assert _consumers(engine) == [C2]


def test_a_group_conflict_leaves_the_replaced_claims(engine, nodes):
    claims.claim(engine, [_member(engine, "h1", C1),
                          _member(engine, "h2", C2)], group=ANTI)
    before = {h: _usage(engine, h) for h in ("h1", "h2")}
    with pytest.raises(claims.GroupConflict):
        # replacing C1 frees h1 but not h2
        claims.claim(engine, [_member(engine, "h2", C3)], group=ANTI,
                     replace=[C1])
    assert _consumers(engine) == [C1, C2]
    assert {h: _usage(engine, h) for h in ("h1", "h2")} == before


def test_ttl_sets_expires_at_by_the_database_clock(engine, nodes):
    before = _db_now(engine)
    claims.claim(engine, [_claim(nodes["h1"], C1)], ttl=600)
    after = _db_now(engine)
    expires = _expires_at(engine, C1)
    assert isinstance(expires, datetime.datetime)
    assert (before + datetime.timedelta(seconds=600)
            <= expires <= after + datetime.timedelta(seconds=601))


def test_no_ttl_means_a_permanent_claim(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)])
    claims.claim(engine, [_claim(nodes["h2"], C2)], ttl=0)
    assert _expires_at(engine, C1) is None
    assert _expires_at(engine, C2) is None


def test_confirm(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h1"], C2)],
                 ttl=60)
    assert _expires_at(engine, C1) is not None
    assert claims.confirm(engine, [C1, C3]) == 1
    assert _expires_at(engine, C1) is None
    assert _expires_at(engine, C2) is not None
    # confirmed before still counts; unknown consumers count 0
    assert claims.confirm(engine, [C1, C2]) == 2
    assert _expires_at(engine, C2) is None
    assert claims.confirm(engine, [C3, C4]) == 0
    assert claims.confirm(engine, []) == 0
    # confirming changes no usage
    assert _usage(engine, "h1")["generation"] == 1


def test_expire_releases_only_claims_past_their_time(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1), _claim(nodes["h1"], C2)],
                 ttl=3600)
    claims.claim(engine, [_claim(nodes["h2"], C3)])            # permanent
    claims.claim(engine, [_claim(node_row(engine, "h2"), C4)], ttl=3600)
    now = _db_now(engine)
    _set_expires_at(engine, C1, now - datetime.timedelta(seconds=5))
    _set_expires_at(engine, C4, now - datetime.timedelta(hours=1))
    h1_gen = _usage(engine, "h1")["generation"]

    assert claims.expire(engine) == 2
    assert _consumers(engine) == [C2, C3]
    h1, h2 = _usage(engine, "h1"), _usage(engine, "h2")
    assert (h1["vcpus_used"], h1["memory_mb_used"], h1["local_gb_used"],
            h1["free_ram_mb"], h1["free_disk_gb"], h1["running_vms"]) == (
        2, 1024, 10, 8192 - 1024, 90, 1)
    assert h1["generation"] == h1_gen + 1
    assert (h2["vcpus_used"], h2["running_vms"]) == (2, 1)

    # twice: released once
    assert claims.expire(engine) == 0
    assert _usage(engine, "h1") == h1
    assert _usage(engine, "h2") == h2


def test_expire_with_nothing_expired(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)], ttl=3600)
    assert claims.expire(engine) == 0
    assert _consumers(engine) == [C1]


def test_confirmed_claims_never_expire(engine, nodes):
    claims.claim(engine, [_claim(nodes["h1"], C1)], ttl=3600)
    _set_expires_at(engine, C1, _db_now(engine)
                    - datetime.timedelta(seconds=5))
    assert claims.confirm(engine, [C1]) == 1
    assert claims.expire(engine) == 0
    assert _consumers(engine) == [C1]
    assert _usage(engine, "h1")["vcpus_used"] == 2
