"""same_host / different_host hints and the soft server-group policies
through the filter scheduler on a real SQLite database: the hinted
instances are found in this service's claims, once per request."""
from __future__ import annotations

import pytest

from scheduler.db import allocations
from scheduler.claims import lifecycle
from scheduler.hosts.planned import ClaimConflict
from scheduler import exception
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import make_spec
from tests.unit.fakes import node

U = [f"abababab-0000-4000-8000-{i:012d}" for i in range(12)]
G = "eeeeeeee-0000-4000-8000-0000000000aa"
FILTERS = ["ComputeFilter", "RamFilter", "ServerGroupAntiAffinityFilter",
           "ServerGroupAffinityFilter", "SameHostFilter",
           "DifferentHostFilter"]


@pytest.fixture
def hint_driver(conf, make_driver):
    conf.set_override("enabled_filters", FILTERS, group="filter_scheduler")
    return make_driver()


def _spec(uuids, memory_mb=1024, **kw):
    return make_spec(flavor={"memory_mb": memory_mb, "vcpus": 1,
                             "root_gb": 10},
                     instance_uuids=list(uuids), **kw)


def _hosts(dests):
    return [d["host"] for d in dests]


def _fleet(register):
    """big is what the weighers prefer; small-1 and small-2 are equal."""
    register(node("big", memory_mb=65536, vcpus=32, local_gb=1000),
             node("small-1", memory_mb=16384), node("small-2",
                                                    memory_mb=16384))


def _place_on(driver, uuid, host):
    [dest] = driver.select_destinations(_spec([uuid], force_hosts=[host]))
    assert dest["host"] == host


def test_same_host_follows_the_hinted_instance(register, hint_driver):
    _fleet(register)
    _place_on(hint_driver, U[0], "small-2")
    dests = hint_driver.select_destinations(_spec(
        U[1:4], scheduler_hints={"same_host": [U[0]]}))
    assert _hosts(dests) == ["small-2"] * 3


def test_same_host_any_of_several(register, hint_driver):
    _fleet(register)
    _place_on(hint_driver, U[0], "small-1")
    _place_on(hint_driver, U[1], "small-2")
    [dest] = hint_driver.select_destinations(_spec(
        U[2:3], scheduler_hints={"same_host": [U[0], U[1]]}))
    assert dest["host"] in ("small-1", "small-2")


def test_same_host_of_an_instance_we_do_not_hold_is_refused(
        register, engine, hint_driver):
    _fleet(register)
    with pytest.raises(exception.NoValidHost) as info:
        hint_driver.select_destinations(_spec(
            U[1:2], scheduler_hints={"same_host": U[0]}))
    assert info.value.message == (
        "No valid host: 0/3 hosts passed. SameHostFilter removed 3 (holds "
        "none of the instances in the same_host hint (0 of 1 hinted "
        "instance(s) placed by this scheduler))")
    assert allocation_rows(engine) == []


def test_same_host_after_the_instance_was_released(register, engine,
                                                   hint_driver):
    _fleet(register)
    _place_on(hint_driver, U[0], "small-1")
    lifecycle.release(engine, [U[0]])
    with pytest.raises(exception.NoValidHost):
        hint_driver.select_destinations(_spec(
            U[1:2], scheduler_hints={"same_host": [U[0]]}))


def test_same_host_still_runs_the_other_filters(register, hint_driver):
    register(node("small", memory_mb=4096), node("big", memory_mb=65536))
    _place_on(hint_driver, U[0], "small")
    with pytest.raises(exception.NoValidHost) as info:
        hint_driver.select_destinations(_spec(
            U[1:3], memory_mb=2048, scheduler_hints={"same_host": [U[0]]}))
    # 1024 + 2048 fit, the next 2048 does not
    assert "instance 2 of 2" in info.value.message
    assert "RamFilter removed 1" in info.value.message


def test_different_host_avoids_the_hinted_instances(register, hint_driver):
    _fleet(register)
    _place_on(hint_driver, U[0], "big")
    dests = hint_driver.select_destinations(_spec(
        U[1:3], scheduler_hints={"different_host": [U[0]]}))
    assert "big" not in _hosts(dests)
    _place_on(hint_driver, U[3], "small-1")
    with pytest.raises(exception.NoValidHost) as info:
        hint_driver.select_destinations(_spec(
            U[4:5], scheduler_hints={"different_host": [U[0], U[1], U[2],
                                                        U[3]]}))
    assert info.value.message == (
        "No valid host: 0/3 hosts passed. DifferentHostFilter removed 3 "
        "(holds an instance in the different_host hint (4 of 4 hinted "
        "instance(s) placed by this scheduler))")


def test_different_host_of_unknown_instances_changes_nothing(register,
                                                             hint_driver):
    _fleet(register)
    [dest] = hint_driver.select_destinations(_spec(
        U[1:2], scheduler_hints={"different_host": [U[0]]}))
    assert dest["host"] == "big"


def test_hints_are_resolved_once_per_request_and_only_with_hints(
        register, conf, hint_driver, monkeypatch):
    _fleet(register)
    _place_on(hint_driver, U[0], "small-1")
    calls = []
    original = allocations.consumer_hosts

    def counted(conn, uuids, exclude=()):
        calls.append((list(uuids), list(exclude)))
        return original(conn, uuids, exclude)

    monkeypatch.setattr(allocations, "consumer_hosts", counted)
    hint_driver.select_destinations(_spec(U[1:2]))
    assert calls == []
    # a lost claim race re-plans, but does not look the hints up again
    conf.set_override("claim_retries", 2, group="scheduler")
    real_claim = hint_driver.claims.claim
    lost = []

    def lose_once(to_claim, **kw):
        if not lost:
            lost.append(to_claim)
            raise ClaimConflict("node changed", to_claim[0].node_id)
        return real_claim(to_claim, **kw)

    monkeypatch.setattr(hint_driver.claims, "claim", lose_once)
    dests = hint_driver.select_destinations(_spec(
        U[2:4], scheduler_hints={"same_host": [U[0]],
                                 "different_host": [U[1]]}))
    assert lost and _hosts(dests) == ["small-1", "small-1"]
    assert calls == [([U[0], U[1]], [])]


def test_a_resent_partial_request_does_not_count_its_own_old_claims(
        register, hint_driver):
    _fleet(register)
    _place_on(hint_driver, U[0], "small-1")
    # U[0] is re-claimed by this request: its old claim is not "on" small-1
    with pytest.raises(exception.NoValidHost) as info:
        hint_driver.select_destinations(_spec(
            U[0:2], scheduler_hints={"same_host": [U[0]]}))
    assert "0 of 1 hinted" in info.value.message


def test_rank_resolves_hints_and_group_members(register, hint_driver):
    _fleet(register)
    _place_on(hint_driver, U[0], "small-2")
    ranked = hint_driver.rank(_spec(U[5:6], scheduler_hints={
        "same_host": [U[0]]}), limit=5)
    assert [h["host"] for h in ranked["hosts"]] == ["small-2"]
    same = next(f for f in ranked["filters"]
                if f["name"] == "SameHostFilter")
    assert (same["in"], same["out"], sorted(same["sample"])) == (
        3, 1, ["big", "small-1"])
    # members claimed earlier count in a dry run too
    hint_driver.select_destinations(_spec(U[1:2], instance_group={
        "uuid": G, "policies": ["anti-affinity"]}, force_hosts=["big"]))
    ranked = hint_driver.rank(_spec(U[6:7], instance_group={
        "uuid": G, "policies": ["anti-affinity"]}), limit=5)
    assert "big" not in [h["host"] for h in ranked["hosts"]]


# --- soft server-group policies --------------------------------------------

def _group(policy):
    return {"uuid": G, "policies": [policy]}


def test_soft_anti_affinity_prefers_hosts_without_members(register, conf,
                                                          hint_driver):
    # the resource weighers alone would put everything on big
    _fleet(register)
    conf.set_override("soft_anti_affinity_weight_multiplier", 10.0,
                      group="filter_scheduler")
    hint_driver.reload()
    first = hint_driver.select_destinations(_spec(
        U[0:2], instance_group=_group("soft-anti-affinity")))
    second = hint_driver.select_destinations(_spec(
        U[2:3], instance_group=_group("soft-anti-affinity")))
    assert sorted(_hosts(first + second)) == ["big", "small-1", "small-2"]
    # and never refuses: more members than hosts still land
    more = hint_driver.select_destinations(_spec(
        U[3:7], instance_group=_group("soft-anti-affinity")))
    assert len(more) == 4
    assert len(allocation_rows(hint_driver.engine)) == 7


def test_soft_affinity_keeps_members_together_across_requests(
        register, conf, hint_driver):
    _fleet(register)
    conf.set_override("soft_affinity_weight_multiplier", 10.0,
                      group="filter_scheduler")
    hint_driver.reload()
    _place_on(hint_driver, U[0], "small-1")
    hint_driver.select_destinations(_spec([U[1]], instance_group=_group(
        "soft-affinity"), force_hosts=["small-1"]))
    dests = hint_driver.select_destinations(_spec(
        U[2:5], instance_group=_group("soft-affinity")))
    assert _hosts(dests) == ["small-1"] * 3


def test_soft_affinity_moves_on_when_the_host_is_full(register, conf,
                                                      hint_driver):
    register(node("a", memory_mb=2048), node("b", memory_mb=8192))
    conf.set_override("soft_affinity_weight_multiplier", 10.0,
                      group="filter_scheduler")
    hint_driver.reload()
    dests = hint_driver.select_destinations(_spec(
        U[0:1], instance_group=_group("soft-affinity"), force_hosts=["a"],
        memory_mb=2048))
    assert _hosts(dests) == ["a"]
    # a is full: the member goes elsewhere rather than being refused
    [dest] = hint_driver.select_destinations(_spec(
        U[1:2], instance_group=_group("soft-affinity"), memory_mb=2048))
    assert dest["host"] == "b"
