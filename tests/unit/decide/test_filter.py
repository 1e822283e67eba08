"""filter_scheduler against a real SQLite database."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import logging

import pytest
from stevedore import extension

from scheduler.claims import consume
from scheduler.claims import lifecycle
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from scheduler import exception
from scheduler.hosts.table import HostTable
from scheduler.db import clock
from scheduler.filters.base import BaseFilter
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_service
from tests.unit.fakes import spec_dict

U = [f"cccccccc-0000-4000-8000-{i:012d}" for i in range(10)]


def _spec(memory_mb=4096, vcpus=1, root_gb=10, **kw):
    return make_spec(flavor={"memory_mb": memory_mb, "vcpus": vcpus,
                             "root_gb": root_gb}, **kw)


def _hosts(dests):
    return [d["host"] for d in dests]


def test_fits_the_flavor_and_claims_it(register, engine, filter_driver):
    register(node("small", memory_mb=4096),
             node("big", memory_mb=16384, ram_ratio=1.5))
    [dest] = filter_driver.select_destinations(
        _spec(memory_mb=8192, vcpus=2, instance_uuids=[U[0]]))
    big = node_row(engine, "big")
    assert dest == {
        "host": "big", "nodename": "big", "uuid": U[0],
        "limits": {"memory_mb": 16384 * 1.5, "vcpu": 8.0, "disk_gb": 100.0},
        "allocation": {"compute_node_uuid": big.uuid, "vcpus": 2,
                       "memory_mb": 8192, "disk_gb": 10}}
    assert (big.memory_mb_used, big.vcpus_used, big.local_gb_used,
            big.generation) == (8192, 2, 10, 1)
    assert node_row(engine, "small").generation == 0
    [alloc] = allocation_rows(engine)
    assert (alloc.consumer_uuid, alloc.compute_node_id, alloc.project_id,
            alloc.user_id) == (U[0], big.id, "p1", "u1")


def test_weighers_pick_the_host_with_most_room(register, filter_driver):
    register(node("a", memory_mb=8192), node("b", memory_mb=32768,
                                             vcpus=32, local_gb=400),
             node("c", memory_mb=16384))
    assert _hosts(filter_driver.select_destinations(_spec())) == ["b"]


def test_negative_ram_multiplier_stacks(register, conf, filter_driver):
    conf.set_override("weighers", ["RAMWeigher"], group="filter_scheduler")
    conf.set_override("ram_weight_multiplier", -1.0,
                      group="filter_scheduler")
    from scheduler.decide.filter import FilterScheduler
    driver = FilterScheduler(conf, filter_driver.host_manager,
                             filter_driver.engine)
    register(node("a", memory_mb=8192), node("b", memory_mb=32768))
    assert _hosts(driver.select_destinations(
        _spec(num_instances=3))) == ["a", "a", "b"]


def test_multi_instance_is_all_or_nothing(register, engine, filter_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(_spec(num_instances=3))
    assert "instance 3 of 3" in info.value.message
    assert info.value.message == (
        "No valid host for instance 3 of 3 (all or nothing: none was "
        "placed); with hosts found for the first 2, 0/1 remaining hosts "
        "passed. RamFilter removed 1 (insufficient RAM: need 4096 MB)")
    assert "RamFilter removed" in info.value.message
    assert allocation_rows(engine) == []
    for host in ("h1", "h2"):
        row = node_row(engine, host)
        assert (row.memory_mb_used, row.generation) == (0, 0)


def test_each_instance_sees_the_previous_ones(register, engine,
                                             filter_driver):
    # Each host fits exactly one instance.
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    dests = filter_driver.select_destinations(
        _spec(instance_uuids=[U[0], U[1]]))
    assert sorted(_hosts(dests)) == ["h1", "h2"]
    assert [d["uuid"] for d in dests] == [U[0], U[1]]
    for host in ("h1", "h2"):
        assert node_row(engine, host).memory_mb_used == 4096
    assert len(allocation_rows(engine)) == 2


def test_several_instances_on_one_host(register, engine, filter_driver):
    register(node("h1", memory_mb=16384), node("tiny", memory_mb=2048))
    dests = filter_driver.select_destinations(_spec(num_instances=4))
    assert _hosts(dests) == ["h1"] * 4
    row = node_row(engine, "h1")
    assert (row.memory_mb_used, row.running_vms, row.generation) == (
        16384, 4, 1)


def test_host_subset_size(register, conf, filter_driver, monkeypatch):
    register(node("h1", memory_mb=8192), node("h2", memory_mb=16384),
             node("h3", memory_mb=32768))
    seen = []

    table = filter_driver.host_table()
    hosts = {s.node_id: s.host for s in table.states}

    def last(candidates, weights=None, slots=1):
        seen.append([hosts[n] for n, _ in candidates])
        return len(candidates) - 1

    monkeypatch.setattr(filter_driver.chooser, "pick", last)
    spec = _spec(memory_mb=1024)
    [selection] = filter_driver.plan(spec, table)
    assert seen == [["h3"]] and selection.host.host == "h3"

    seen.clear()
    conf.set_override("host_subset_size", 2, group="filter_scheduler")
    filter_driver.reload()
    [selection] = filter_driver.plan(spec, table)
    assert seen == [["h3", "h2"]] and selection.host.host == "h2"

    seen.clear()
    conf.set_override("host_subset_size", 10, group="filter_scheduler")
    filter_driver.reload()
    [selection] = filter_driver.plan(spec, table)
    assert seen == [["h3", "h2", "h1"]] and selection.host.host == "h1"


def test_hosts_tied_with_the_last_of_the_subset_are_candidates_too(
        register, conf, filter_driver, monkeypatch):
    register(node("small", memory_mb=8192), node("t1", memory_mb=32768),
             node("t2", memory_mb=32768), node("t3", memory_mb=32768))
    seen = []
    table = filter_driver.host_table()
    hosts = {s.node_id: s.host for s in table.states}

    def first(candidates, weights=None, slots=1):
        seen.append(sorted(hosts[n] for n, _ in candidates))
        return 0

    monkeypatch.setattr(filter_driver.chooser, "pick", first)
    spec = _spec(memory_mb=1024)
    filter_driver.plan(spec, table)
    # One best host asked for, three equally best offered; never "small".
    assert seen == [["t1", "t2", "t3"]]

    seen.clear()
    conf.set_override("host_subset_size", 2, group="filter_scheduler")
    filter_driver.reload()
    filter_driver.plan(spec, table)
    assert seen == [["t1", "t2", "t3"]]


def test_two_workers_take_different_hosts_of_the_best_weight(
        register, conf, make_driver):
    from scheduler.decide import choice
    # host_subset_size 1 (nova's default; ours only for a process alone),
    # on identical nodes and one that is worse: each worker's own, never
    # the worse one.
    conf.set_override("host_subset_size", 1, "filter_scheduler")
    register(node("small", memory_mb=8192),
             *(node(f"t{i}", memory_mb=32768) for i in range(8)))
    chosen = set()
    for index in (0, 1):
        driver = make_driver()
        driver.chooser.share = choice.Share(index, 2)
        [selection] = driver.plan(_spec(memory_mb=1024), driver.host_table())
        assert driver.chooser.share.owns(selection.host.node_id)
        chosen.add(selection.host.host)
    assert len(chosen) == 2 and "small" not in chosen


def test_two_workers_under_the_defaults_do_not_want_the_same_host(
        register, make_driver):
    """The defaults do not race themselves: a server's 2 workers (its
    default) on hosts of all different weights, where one best host is
    what both wanted (host_subset_size 1: each lost about 1 claim in 11
    to the other). Each now takes one of its own share; alone, a worker
    still takes the very best, as nova's default does."""
    from scheduler.decide import choice
    register(*(node(f"h{i:02d}", memory_mb=8192 + 512 * i)
               for i in range(40)))
    chosen = set()
    for index in (0, 1):
        driver = make_driver()
        driver.chooser.share = choice.Share(index, 2)
        [selection] = driver.plan(_spec(memory_mb=1024), driver.host_table())
        assert driver.chooser.share.owns(selection.host.node_id)
        chosen.add(selection.host.host)
    assert len(chosen) == 2
    alone = make_driver()
    [selection] = alone.plan(_spec(memory_mb=1024), alone.host_table())
    assert selection.host.host == "h39"


def test_plan_carries_hosts_as_read(register, filter_driver):
    register(node("h1", memory_mb=16384))
    hosts = filter_driver.host_table()
    selections = filter_driver.plan(_spec(num_instances=2), hosts)
    assert all(s.host is hosts.states[0] for s in selections)


def test_resending_the_same_uuids_claims_nothing_new(register, engine,
                                                     filter_driver):
    register(node("h1", memory_mb=8192), node("h2", memory_mb=8192))
    spec = _spec(instance_uuids=[U[0], U[1]])
    first = filter_driver.select_destinations(spec)
    usage = {h: node_row(engine, h) for h in ("h1", "h2")}
    again = filter_driver.select_destinations(spec)
    assert [(d["host"], d["uuid"], d["allocation"]) for d in again] == [
        (d["host"], d["uuid"], d["allocation"]) for d in first]
    assert {h: node_row(engine, h) for h in ("h1", "h2")} == usage
    assert len(allocation_rows(engine)) == 2


def test_partly_held_uuids_are_replaced(register, engine, filter_driver):
    register(node("h1", memory_mb=16384))
    filter_driver.select_destinations(_spec(instance_uuids=[U[0]]))
    dests = filter_driver.select_destinations(
        _spec(instance_uuids=[U[0], U[1]]))
    assert [d["uuid"] for d in dests] == [U[0], U[1]]
    assert sorted(a.consumer_uuid for a in allocation_rows(engine)) == [
        U[0], U[1]]
    assert node_row(engine, "h1").memory_mb_used == 8192


def test_a_partly_held_request_fits_where_its_own_claims_are(
        register, engine, filter_driver):
    """A re-send whose other consumer's claim was released: the claim it
    replaces is room for it, in the plan as in SQL, not counted twice."""
    register(node("h1", memory_mb=8192))
    spec = _spec(instance_uuids=[U[0], U[1]])
    filter_driver.select_destinations(spec)
    lifecycle.release(engine, [U[1]])
    dests = filter_driver.select_destinations(spec)
    assert [(d["uuid"], d["host"]) for d in dests] == [(U[0], "h1"),
                                                       (U[1], "h1")]
    row = node_row(engine, "h1")
    assert (row.memory_mb_used, row.running_vms) == (8192, 2)


def _stale_first(driver, stale):
    """A cycle that plans on ``stale`` states unless asked for fresh ones
    (what a retry does)."""
    fresh_cycle = driver.cycle

    @contextlib.contextmanager
    def cycle(fresh=False):
        if fresh:
            with fresh_cycle(fresh) as table:
                yield table
        else:
            yield HostTable(stale)
    return cycle


def test_claim_conflict_is_retried_with_fresh_states(register, engine,
                                                     filter_driver):
    register(node("h1", memory_mb=8192))
    stale = filter_driver.host_manager.host_states()
    # Another scheduler claims on h1 after we read it.
    consume.claim(engine, [Claim(U[9], stale[0].node_id, stale[0].host,
                                 stale[0].generation, 1, 2048, 10)])
    calls = []
    fresh_cycle = filter_driver.cycle

    @contextlib.contextmanager
    def stale_once(fresh=False):
        if fresh:
            with fresh_cycle(fresh) as table:
                yield table
            return
        calls.append(1)
        yield HostTable(stale)

    filter_driver.cycle = stale_once
    [dest] = filter_driver.select_destinations(_spec(instance_uuids=[U[0]]))
    assert calls == [1]          # the retry read SQL, not the stale list
    assert dest["host"] == "h1"
    row = node_row(engine, "h1")
    assert (row.memory_mb_used, row.generation) == (2048 + 4096, 2)
    assert sorted(a.consumer_uuid for a in allocation_rows(engine)) == [
        U[0], U[9]]


def test_conflict_retry_replans_when_the_winner_filled_the_host(
        register, engine, filter_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=2048))
    stale = filter_driver.host_manager.host_states()
    h1 = next(s for s in stale if s.host == "h1")
    consume.claim(engine, [Claim(U[9], h1.node_id, h1.host, h1.generation, 1,
                                 2048, 10)])
    filter_driver.cycle = _stale_first(filter_driver, stale)
    # h1 looked best (most free RAM) but is now half full; the retry still
    # fits the 2048 MB instance on either host.
    [dest] = filter_driver.select_destinations(_spec(memory_mb=2048))
    assert dest["host"] in ("h1", "h2")
    assert len(allocation_rows(engine)) == 2


def test_losing_every_race_gives_no_valid_host(register, engine, conf,
                                               filter_driver, monkeypatch):
    register(node("h1"))
    conf.set_override("claim_retries", 2, group="scheduler")
    attempts = []

    def always_conflict(to_claim, **kw):
        attempts.append(to_claim)
        raise ClaimConflict("node changed", to_claim[0].node_id)

    monkeypatch.setattr(filter_driver.claims, "claim", always_conflict)
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(_spec())
    assert len(attempts) == 3
    assert "lost the claim race 3 times" in info.value.message
    assert allocation_rows(engine) == []


def test_concurrent_duplicate_request_returns_what_it_claimed(
        register, engine, filter_driver):
    register(node("h1", memory_mb=16384), node("h2", memory_mb=8192))
    original_plan = filter_driver.plan

    def plan_while_a_twin_claims(spec, hosts, spread=1):
        selections = original_plan(spec, hosts, spread)
        # The twin request (same consumer) wins on h2 in the meantime.
        h2 = node_row(engine, "h2")
        consume.claim(engine, [Claim(U[0], h2.id, h2.host, h2.generation, 1,
                                     4096, 10)])
        return selections

    filter_driver.plan = plan_while_a_twin_claims
    [dest] = filter_driver.select_destinations(_spec(instance_uuids=[U[0]]))
    assert dest["host"] == "h2" and dest["uuid"] == U[0]
    assert node_row(engine, "h1").memory_mb_used == 0   # rolled back
    assert node_row(engine, "h1").generation == 0
    assert len(allocation_rows(engine)) == 1


def test_concurrent_duplicate_move_returns_what_its_twin_claimed(
        register, engine, filter_driver):
    # nova's migrate (no declared move: ignore_hosts names the source),
    # delivered twice and handled at the same time.
    register(node("h1", memory_mb=16384), node("h2", memory_mb=4096),
             node("h3", memory_mb=4096))
    h1 = node_row(engine, "h1")
    consume.claim(engine, [Claim(U[0], h1.id, "h1", h1.generation, 1,
                                 4096, 10)])
    original_plan = filter_driver.plan
    plans = []
    twin_answered = []

    def plan_while_a_twin_moves(spec, hosts, spread=1):
        selections = original_plan(spec, hosts, spread)
        plans.append(spec)
        if len(plans) == 2:
            # This plan knows U0 holds h1 (the first, optimistic one was
            # refused by the unique key); the twin, which read the same,
            # moves U0 to h2 now.
            twin = ({"h2", "h3"} - {selections[0].host.host}).pop()
            row = node_row(engine, twin)
            consume.claim(engine, [Claim(U[0], row.id, twin,
                                         row.generation, 1, 4096,
                                         10)], move=[U[0]])
            twin_answered.append(twin)
        return selections

    filter_driver.plan = plan_while_a_twin_moves
    # move None: nova says nothing, the held claim on an ignored host
    # makes it a move (moves.is_move).
    [dest] = filter_driver.select_destinations(dataclasses.replace(
        _spec(instance_uuids=[U[0]], ignore_hosts=["h1"]), move=None))
    # Both deliveries answer the destination that holds the claim.
    assert twin_answered == [dest["host"]]
    [row] = allocation_rows(engine)
    assert row.compute_node_id == node_row(engine, dest["host"]).id
    assert row.source_node_id == h1.id
    assert sum(node_row(engine, h).memory_mb_used
               for h in ("h1", "h2", "h3")) == 8192   # source + one dest


def test_a_re_sent_request_leaves_no_node_out_of_the_choice(
        register, conf, make_driver):
    from scheduler.decide.filter import FilterScheduler
    conf.set_override("host_subset_size", 2, "filter_scheduler")
    conf.set_override("host_subset_choice", "random", "filter_scheduler")
    driver = make_driver(FilterScheduler)
    register(node("h1", vcpus=64, memory_mb=65536, local_gb=1000),
             node("h2", vcpus=64, memory_mb=65536, local_gb=1000))
    small = {"memory_mb": 1024, "vcpus": 1, "root_gb": 1}
    spec = make_spec(flavor=small)
    driver.select_destinations(spec)
    driver.select_destinations(spec)    # nova re-sends after a timeout
    hosts = {driver.select_destinations(make_spec(flavor=small))[0]["host"]
             for _ in range(20)}
    assert hosts == {"h1", "h2"}


def test_no_valid_host_names_the_filters(register, engine, filter_driver):
    register(node("down", memory_mb=65536), node("small", memory_mb=2048),
             node("far", memory_mb=65536, zone="az2"))
    with engine.connect() as conn:
        now = clock.db_time(conn)
    set_service(engine, "down",
                last_seen_up=now - datetime.timedelta(hours=1))
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec(memory_mb=8192, availability_zone="az1"))
    assert info.value.message == (
        "No valid host: 0/3 hosts passed. AvailabilityZoneFilter removed 1 "
        "(not in the requested availability zone (az1)), ComputeFilter "
        "removed 1 (service down or disabled), RamFilter removed 1 "
        "(insufficient RAM: need 8192 MB)")
    assert allocation_rows(engine) == []


def test_no_hosts_at_all(engine, filter_driver):
    """Not a bare "0/0 hosts passed": that no host is known is the cause,
    and says where to look."""
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(_spec())
    assert info.value.message == (
        "No valid host: 0/0 hosts passed (no compute node with a compute "
        "service is registered)")


def test_availability_zone(register, filter_driver):
    register(node("a1", zone="az1"), node("a2", zone="az2", memory_mb=65536))
    dests = filter_driver.select_destinations(
        _spec(num_instances=2, availability_zone="az1"))
    assert _hosts(dests) == ["a1", "a1"]


def test_ignore_hosts(register, filter_driver):
    register(node("h1", memory_mb=65536), node("h2"))
    assert _hosts(filter_driver.select_destinations(
        _spec(ignore_hosts=["H1"]))) == ["h2"]


def test_forced_host_skips_filters_and_limits(register, engine,
                                              filter_driver):
    register(node("h1"), node("h2"))
    with engine.connect() as conn:
        now = clock.db_time(conn)
    set_service(engine, "h1", last_seen_up=now - datetime.timedelta(hours=1))
    [dest] = filter_driver.select_destinations(
        _spec(memory_mb=8192, force_hosts=["h1"]))
    assert dest["host"] == "h1" and dest["limits"] == {}
    assert node_row(engine, "h1").memory_mb_used == 8192


def test_forced_host_that_is_disabled_is_refused(register, engine,
                                                 filter_driver):
    """nova 34: compute_status_filter holds for forced hosts too."""
    register(node("h1"), node("h2"))
    set_service(engine, "h1", disabled=True, disabled_reason="x")
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(_spec(force_hosts=["h1"]))
    assert info.value.message == (
        "No valid host: 0/2 hosts passed. force_hosts removed 1 (not a "
        "forced host), compute_status_filter removed 1 (service disabled)")
    assert allocation_rows(engine) == []


def test_forced_host_outside_the_requested_zone_is_refused(
        register, engine, filter_driver):
    register(node("h1", zone="az1"), node("h2", zone="az2"))
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec(force_hosts=["h2"], availability_zone="az1"))
    assert "map_az_to_placement_aggregate removed 1" in info.value.message
    assert allocation_rows(engine) == []


def test_forced_host_never_overcommits(register, engine, filter_driver):
    """Unlike nova, forcing skips the filters but not the claim's capacity
    check: a forced host that is full refuses at once."""
    register(node("h1"), node("h2"))
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec(memory_mb=65536, force_hosts=["h1"]))
    assert info.value.message.startswith(
        "No valid host: the forced host has no room: compute node")
    assert allocation_rows(engine) == []


def test_requested_destination_still_filters(register, engine,
                                             filter_driver):
    register(node("h1"), node("h2"))
    set_service(engine, "h1", disabled=True)
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec(requested_destination={"host": "h1"}))
    assert "requested_destination removed 1" in info.value.message
    assert "ComputeFilter removed 1" in info.value.message


def test_return_alternates(register, conf, filter_driver):
    register(node("a", memory_mb=65536), node("b", memory_mb=32768),
             node("c", memory_mb=16384), node("d", memory_mb=8192))
    [dest] = filter_driver.select_destinations(
        _spec(return_alternates=True))
    assert dest["host"] == "a"
    assert [a["host"] for a in dest["alternates"]] == ["b", "c"]
    assert all("limits" in a for a in dest["alternates"])
    [dest] = filter_driver.select_destinations(_spec())
    assert "alternates" not in dest


def test_rank_is_a_dry_run(register, engine, filter_driver):
    register(node("a", memory_mb=65536), node("b", memory_mb=2048))
    ranked = filter_driver.rank(_spec(), limit=5)
    assert [h["host"] for h in ranked["hosts"]] == ["a"]
    assert ranked["total"] == 2
    ram = next(f for f in ranked["filters"] if f["name"] == "RamFilter")
    assert (ram["in"], ram["out"], ram["sample"]) == (2, 1, ["b"])
    assert allocation_rows(engine) == []
    assert node_row(engine, "a").generation == 0


def test_a_plugin_filter_by_stevedore(register, filter_driver):
    class OnlyB(BaseFilter):
        reason = "not b"

        def host_passes(self, host, spec):
            return host.host == "b"

    manager = extension.ExtensionManager.make_test_instance([
        extension.Extension("OnlyB", None, OnlyB,
                            OnlyB(filter_driver.conf))])
    filter_driver.filters = [ext.obj for ext in manager.extensions]
    register(node("a", memory_mb=65536), node("b"))
    assert _hosts(filter_driver.select_destinations(_spec())) == ["b"]


def test_spec_from_legacy_is_scheduled(register, filter_driver):
    register(node("h1"))
    spec = RequestSpec.from_legacy(
        {"instance_type": spec_dict()["flavor"],
         "instance_properties": {"uuid": U[3]}}, {})
    [dest] = filter_driver.select_destinations(spec)
    assert dest["uuid"] == U[3]


def test_a_lost_race_widens_the_choice(register, engine, filter_driver,
                                        monkeypatch):
    """Requests that lost a race together must not all pick the same next
    host: each retry chooses among twice as many of the best."""
    register(*(node(f"h{i}", memory_mb=8192) for i in range(8)))
    subsets = []
    original = filter_driver.plan

    def recording(spec, table, spread=1):
        subsets.append(spread)
        return original(spec, table, spread)

    real_claim = filter_driver.claims.claim
    lost = []

    def lose_twice(*args, **kwargs):
        if len(lost) < 2:
            lost.append(1)
            raise ClaimConflict("node changed")
        return real_claim(*args, **kwargs)

    filter_driver.plan = recording
    monkeypatch.setattr(filter_driver.claims, "claim", lose_twice)
    filter_driver.select_destinations(_spec())
    assert subsets == [1, 2, 4]


def test_reload_swaps_in_a_new_set_and_leaves_the_old_one_whole(
        register, conf, filter_driver):
    register(node("a", memory_mb=8192), node("b", memory_mb=32768))
    old = filter_driver.pipeline
    conf.set_override("enabled_filters", ["ComputeFilter"],
                      group="filter_scheduler")
    conf.set_override("weighers", ["RAMWeigher"], group="filter_scheduler")
    filter_driver.reload()
    new = filter_driver.pipeline
    assert new is not old
    # The capacity filters run whatever the set (see the next test).
    capacity = ["RamFilter", "CoreFilter", "DiskFilter"]
    assert [f.name for f in new.filters] == ["ComputeFilter"] + capacity
    assert [w.name for w in new.weighers] == ["RAMWeigher"]
    # A request that started before the reload still holds its own set.
    assert "ImagePropertiesFilter" in [f.name for f in old.filters]
    ranked = filter_driver.rank(_spec(), 10)
    assert [s["name"] for s in ranked["filters"]] == [
        "ComputeFilter"] + capacity


#: nova 34's own ``[filter_scheduler] enabled_filters`` default: no
#: capacity filter (placement checks capacity there).
NOVA_34_FILTERS = ["ComputeFilter", "ComputeCapabilitiesFilter",
                   "ImagePropertiesFilter", "ServerGroupAntiAffinityFilter",
                   "ServerGroupAffinityFilter"]


def test_nova_34s_filter_list_still_plans_only_hosts_with_room(
        register, conf, filter_driver, caplog):
    # An operator's nova.conf carried over: no RamFilter, CoreFilter or
    # DiskFilter. The claim checks every node's capacity all the same, so
    # the planner must too, as nova's placement does before its filters:
    # the three hosts with the most free RAM and vCPUs have no disk for
    # the flavor, and the one that has is chosen, not refused as "the
    # planner and the claim disagreed".
    caplog.set_level(logging.INFO)
    conf.set_override("enabled_filters", NOVA_34_FILTERS,
                      group="filter_scheduler")
    filter_driver.reload()
    register(*(node(f"d{i}", memory_mb=65536, vcpus=32, local_gb=5)
               for i in range(3)), node("h4", memory_mb=8192))
    assert _hosts(filter_driver.select_destinations(_spec())) == ["h4"]
    assert "disagree" not in caplog.text
    assert "enabled_filters checks no disk_gb, memory_mb, vcpu; " \
        "RamFilter, CoreFilter, DiskFilter run after them" in caplog.text
    with pytest.raises(exception.NoValidHost,
                       match="DiskFilter removed 3 .insufficient disk"):
        filter_driver.select_destinations(_spec(root_gb=50, memory_mb=16384))


def test_a_filter_set_that_checks_a_capacity_gets_no_second_filter_for_it(
        conf, filter_driver):
    conf.set_override("enabled_filters",
                      ["ComputeFilter", "AggregateRamFilter", "CoreFilter"],
                      group="filter_scheduler")
    filter_driver.reload()
    assert [f.name for f in filter_driver.filters] == [
        "ComputeFilter", "AggregateRamFilter", "CoreFilter", "DiskFilter"]


def test_reload_with_an_unknown_filter_keeps_the_current_set(
        conf, filter_driver):
    current = filter_driver.pipeline
    conf.set_override("enabled_filters", ["NoSuchFilter"],
                      group="filter_scheduler")
    with pytest.raises(exception.ConfigError, match="NoSuchFilter"):
        filter_driver.reload()
    assert filter_driver.pipeline is current


def test_a_request_keeps_the_settings_its_set_was_loaded_with(
        register, conf, filter_driver):
    # SIGHUP mutates the live configuration in place; until the driver
    # reloads, requests run with the settings frozen with their set.
    register(node("h1", memory_mb=8192), node("h2", memory_mb=16384))
    pipeline = filter_driver.pipeline
    conf.set_override("ram_weight_multiplier", -1.0,
                      group="filter_scheduler")
    conf.set_override("host_subset_size", 2, group="filter_scheduler")
    assert filter_driver.pipeline is pipeline
    assert pipeline.settings.filter_scheduler.ram_weight_multiplier == 1.0
    [ram] = [w for w in pipeline.weighers if w.name == "RAMWeigher"]
    assert ram.multiplier == 1.0
    [selection] = filter_driver.plan(_spec(memory_mb=1024),
                                     filter_driver.host_table())
    assert selection.host.host == "h2"
    filter_driver.reload()
    assert filter_driver.pipeline.settings.filter_scheduler \
        .host_subset_size == 2
    [ram] = [w for w in filter_driver.pipeline.weighers
             if w.name == "RAMWeigher"]
    assert ram.multiplier == -1.0


def _ram_only(conf, filter_driver):
    """A driver weighing free RAM alone, so the expected order is plain."""
    conf.set_override("weighers", ["RAMWeigher"], group="filter_scheduler")
    from scheduler.decide.filter import FilterScheduler
    return FilterScheduler(conf, filter_driver.host_manager,
                           filter_driver.engine)


def test_multi_instance_alternates_exclude_every_selected_host(
        register, conf, filter_driver):
    """nova (manager.py _get_alternate_hosts): an alternate is never a host
    selected for *any* instance of the request, and for a multi-instance
    request the alternates come from one re-filtered, re-weighed list,
    after every instance's usage is consumed."""
    driver = _ram_only(conf, filter_driver)
    register(node("a", memory_mb=20480), node("b", memory_mb=18432),
             node("c", memory_mb=15360), node("d", memory_mb=8192))
    dests = driver.select_destinations(
        _spec(num_instances=2, return_alternates=True))
    assert _hosts(dests) == ["a", "b"]
    # After both are planned: a 16384, c 15360, b 14336, d 8192 free; a
    # and b are selected, so c then d, for both instances.
    for dest in dests:
        assert [a["host"] for a in dest["alternates"]] == ["c", "d"]


def test_multi_instance_alternates_keep_anti_affinity(
        register, conf, filter_driver):
    """Instance 1's alternate must not be the host instance 2 got: a
    reschedule there would break the hard anti-affinity group (nova
    re-filters with every selected host in the group before choosing
    alternates)."""
    conf.set_override("enabled_filters",
                      ["ComputeFilter", "RamFilter",
                       "ServerGroupAntiAffinityFilter"],
                      group="filter_scheduler")
    driver = _ram_only(conf, filter_driver)
    register(node("a", memory_mb=20480), node("b", memory_mb=18432),
             node("c", memory_mb=8192))
    dests = driver.select_destinations(
        _spec(num_instances=2, return_alternates=True,
              instance_group={"uuid": "dddddddd-0000-4000-8000-000000000001",
                              "policies": ["anti-affinity"]}))
    assert _hosts(dests) == ["a", "b"]
    for dest in dests:
        assert [a["host"] for a in dest["alternates"]] == ["c"]


def test_random_subset_pick_gives_each_of_the_best_novas_chance(
        conf, filter_driver):
    """nova (manager.py _get_sorted_hosts): ``random.choice`` among the
    first ``host_subset_size`` of the sorted hosts, so with a subset of 2
    the one strictly best host is taken half the time, however many hosts
    tie for second place. The hosts tied with the subset's last may share
    its slot, but not take the better hosts' chances."""
    conf.set_override("host_subset_size", 2, group="filter_scheduler")
    conf.set_override("host_subset_choice", "random",
                      group="filter_scheduler")
    driver = _ram_only(conf, filter_driver)
    driver.chooser._rng.seed(7)
    table = HostTable(
        [make_host("best", node_id=1, memory_mb_total=32768)]
        + [make_host(f"h{i}", node_id=i + 2, memory_mb_total=16384)
           for i in range(40)])
    spec = _spec(memory_mb=1024)
    picks = [driver.plan(spec, table)[0].host.host for _ in range(400)]
    # nova: Binomial(400, 0.5) -> 200 +- 10; 150 is five sigma away.
    assert picks.count("best") > 150


def _nova(**kw) -> RequestSpec:
    """A request as nova's 4.x API sends it: the move unsaid."""
    return dataclasses.replace(_spec(memory_mb=1024, **kw), move=None)


@pytest.mark.parametrize("ignored, source", [
    # Moved on at once (a resize, a live migration back): nova ignores the
    # host it is on, the live migration's destination.
    (["h2"], "h2"),
    # A live migration's re-try ignores its source and the destination it
    # gave up: the instance never left h1.
    (["h1", "h2"], "h1"),
])
def test_a_move_without_a_confirm_step_moved_on_starts_where_nova_says(
        register, engine, filter_driver, ignored, source):
    register(node("h1"), node("h2"), node("h3"))
    filter_driver.select_destinations(_nova(instance_uuids=[U[0]],
                                            force_hosts=["h1"]))
    # Live-migrated to h2 (no alternates), not yet listed there.
    filter_driver.select_destinations(_nova(
        instance_uuids=[U[0]], force_hosts=["h2"], ignore_hosts=["h1"]))
    [row] = allocation_rows(engine)
    assert row.confirm_on_arrival

    [dest] = filter_driver.select_destinations(_nova(
        instance_uuids=[U[0]], ignore_hosts=ignored))

    assert dest["host"] == "h3"
    [row] = allocation_rows(engine)
    assert row.source_node_id == node_row(engine, source).id
    assert {h: node_row(engine, h).memory_mb_used
            for h in ("h1", "h2", "h3")} == {
        "h1": 1024 if source == "h1" else 0,
        "h2": 1024 if source == "h2" else 0, "h3": 1024}


def test_a_resize_moved_on_before_its_confirm_was_served_starts_where_it_is(
        register, engine, filter_driver):
    """confirm_resize saves the instance active on h2 before h1 casts
    delete_instance_info; the user resizes again at once, and nova's
    request ignores the host it is on. The new move kept h1 as its source
    and, once the late cast confirmed that, h2, where the instance runs
    until the new resize is confirmed, was charged nothing."""
    register(node("h1"), node("h2"), node("h3"))
    filter_driver.select_destinations(_nova(instance_uuids=[U[0]],
                                            force_hosts=["h1"]))
    # Resized to h2 (with alternates: it waits for the user's confirm).
    filter_driver.select_destinations(dataclasses.replace(_spec(
        memory_mb=2048, instance_uuids=[U[0]], force_hosts=["h2"],
        ignore_hosts=["h1"], return_alternates=True), move=None))

    [dest] = filter_driver.select_destinations(dataclasses.replace(_spec(
        memory_mb=3072, instance_uuids=[U[0]], ignore_hosts=["h2"],
        return_alternates=True), move=None))

    assert dest["host"] in ("h1", "h3")
    [row] = allocation_rows(engine)
    assert row.source_node_id == node_row(engine, "h2").id
    used = {h: node_row(engine, h).memory_mb_used for h in ("h1", "h2", "h3")}
    assert used[dest["host"]] == 3072 and used["h2"] == 2048
    assert sum(used.values()) == 3072 + 2048


def test_rank_of_a_rebuild_check_is_the_check_select_makes(register,
                                                           filter_driver):
    # A rebuild (nova's _nova_check_type) checks the instance's current
    # host: forced or not, the filters run there (nova's host_manager skips
    # them for a forced host only without a check type). rank must show
    # the check select_destinations makes.
    register(node("h1"), node("h2"))
    rebuild = {"_nova_check_type": ["rebuild"]}
    arm = {"id": "i", "properties": {"hw_architecture": "aarch64"}}
    forced = _spec(scheduler_hints=rebuild, force_hosts=["h1"], image=arm)
    with pytest.raises(exception.NoValidHost):
        filter_driver.select_destinations(forced)
    ranked = filter_driver.rank(forced, 10)
    assert ranked["hosts"] == []
    assert "ImagePropertiesFilter" in [f["name"] for f in ranked["filters"]]


def test_a_move_ignoring_where_it_is_moving_in_another_case_moves_on(
        register, filter_driver):
    # A consumer moving h1 -> h2, moved again ignoring both hosts: with
    # h2 spelled "H2" (host names match without regard to case) it is a
    # move, not a re-send answered with the very host it ignores.
    register(node("h1", memory_mb=32768), node("h2", memory_mb=16384),
             node("h3", memory_mb=8192))
    filter_driver.select_destinations(_spec(instance_uuids=[U[0]]))
    assert _hosts(filter_driver.select_destinations(_spec(
        instance_uuids=[U[0]], move=True, ignore_hosts=["h1"]))) == ["h2"]
    assert _hosts(filter_driver.select_destinations(_spec(
        instance_uuids=[U[0]], move=True,
        ignore_hosts=["h1", "H2"]))) == ["h3"]
