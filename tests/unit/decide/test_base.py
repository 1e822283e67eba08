"""What every driver shares: one consistent table per decision, no race
with its own threads, a claim that checks what the planner checked, and a
NoRoom that is not a race reported as the bug it is."""
from __future__ import annotations

import json
import sys
import threading

import numpy as np
import pytest
import sqlalchemy as sa

from scheduler.admin import aggregates
from scheduler.admin import audit
from scheduler.claims import consume
from scheduler.db import allocations
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from scheduler import exception
from scheduler.sim import fleet
from scheduler.db import models
from scheduler.decide.caching import CachingScheduler
from scheduler.filters.availability_zone import AvailabilityZoneFilter
from scheduler.filters.base import BaseFilter
from scheduler.filters.compute import ComputeFilter
from tests.unit.fakes import make_spec
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node
from tests.unit.fakes import set_service


@pytest.fixture
def fast_switching():
    """Switch threads as often as the interpreter can, so a window between
    two writes of a shared structure is hit in seconds, not by luck."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


class TableProbe(BaseFilter):
    """Passes every host, and records any table it is shown that no single
    refresh produced: the writer below sets every node's usage to one
    value and keeps every host in zone az1, in one transaction each time."""
    reason = "probe"

    def __init__(self, conf):
        super().__init__(conf)
        self.torn: list[str] = []
        self.looks = 0

    def filter_columns(self, view, idx, spec):
        self.looks += 1
        table = view.table
        used = set(table.memory_mb_used.tolist())
        in_states = {s.memory_mb_used for s in table.states}
        zone = table.zones.get("az1")
        in_zone = 0 if zone is None else int(np.count_nonzero(zone))
        if len(used) != 1 or used != in_states or in_zone != len(table):
            self.torn.append(f"usage columns {sorted(used)}, states "
                             f"{sorted(in_states)}, {in_zone}/{len(table)} "
                             f"hosts in az1")
        return idx


def test_planners_never_see_a_half_updated_table(engine, conf, make_driver,
                                                 fast_switching):
    """Planners keep planning (the caching driver: no SQL per request) while
    a periodic refresh brings in what a writer changes."""
    fleet.register(engine, [node(f"h{i:04d}", zone="az1")
                            for i in range(1500)])
    driver = make_driver(CachingScheduler)
    probe = TableProbe(conf)
    driver.filters = [AvailabilityZoneFilter(conf), probe]
    driver.host_manager.refresh()
    spec = make_spec(availability_zone="az1")
    done = threading.Event()
    failures: list[str] = []

    def write():
        n = models.compute_nodes
        try:
            # At least 40 rounds, and until the planners have looked 100
            # times (how often they get the cycle depends on the machine).
            for round_ in range(1000):
                if round_ >= 40 and probe.looks >= 100:
                    break
                with engine.begin() as conn:
                    conn.execute(n.update().values(
                        memory_mb_used=1024 * (round_ % 2)))
                # Every host's aggregates change: zones are rebuilt.
                aggregates.set_aggregate_metadata(
                    engine, "az1", {"round": str(round_)})
        finally:
            done.set()

    def refresh():
        while not done.is_set():
            driver.run_periodic_tasks()

    def plan():
        while not done.is_set():
            try:
                driver.decide(spec)
            except Exception as e:   # NoValidHost included: all are in az1
                failures.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=write),
               threading.Thread(target=refresh)] + [
        threading.Thread(target=plan) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    assert not probe.torn, (len(probe.torn), probe.looks, probe.torn[:3])
    # The planners did plan while the table was being refreshed.
    assert probe.looks >= 100


def test_a_process_never_races_its_own_threads(register, engine,
                                               make_driver, monkeypatch,
                                               fast_switching):
    """Each request plans on the usage the previous one planned (assumed
    before its claim): concurrent requests of one process spread over the
    hosts at once instead of losing claims to each other."""
    hosts = 8
    register(*[node(f"h{i}", memory_mb=4096) for i in range(hosts)])
    driver = make_driver()
    lost = []
    real_claim = driver.claims.claim

    def counting_claim(*args, **kwargs):
        try:
            return real_claim(*args, **kwargs)
        except ClaimConflict as e:
            lost.append(str(e))
            raise

    monkeypatch.setattr(driver.claims, "claim", counting_claim)
    start = threading.Barrier(hosts)
    results: list = []

    def request(i):
        start.wait()
        spec = make_spec(instance_uuids=[f"00000000-0000-4000-8000-"
                                         f"{i:012d}"],
                         flavor={"memory_mb": 4096, "root_gb": 1})
        try:
            results.append(driver.select_destinations(spec)[0]["host"])
        except exception.NoValidHost as e:
            results.append(e)

    threads = [threading.Thread(target=request, args=(i,))
               for i in range(hosts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(f"h{i}" for i in range(hosts))
    assert lost == []


def test_a_host_allowed_by_an_aggregate_ratio_is_claimed(
        register, engine, conf, make_driver):
    conf.set_override("enabled_filters", ["AggregateRamFilter"],
                      "filter_scheduler")
    register(node("h1", memory_mb=4096, ram_ratio=1.0))
    set_node(engine, "h1", memory_mb_used=3072)
    aggregates.create_aggregate(engine, "overcommit")
    aggregates.add_aggregate_host(engine, "overcommit", "h1")
    aggregates.set_aggregate_metadata(engine, "overcommit",
                                      {"ram_allocation_ratio": "2.0"})
    driver = make_driver()
    [dest] = driver.select_destinations(
        make_spec(flavor={"memory_mb": 2048, "root_gb": 1}))
    assert dest["host"] == "h1"
    assert dest["limits"]["memory_mb"] == 8192.0
    assert node_row(engine, "h1").memory_mb_used == 5120


def _without_ram_filter(driver, conf):
    """``driver`` planning with ComputeFilter alone, injected as a plugin
    test injects filters: its planner does not look at RAM."""
    driver.filters = [ComputeFilter(conf)]
    return driver


def test_a_no_room_that_is_not_a_race_replans_without_that_node(
        register, engine, conf, make_driver, caplog):
    # A planner that does not look at RAM (a filter set injected without
    # RamFilter: a bug, since a configured set always checks capacity) and
    # prefers the fuller host: the claim, which always checks, refuses h1.
    conf.set_override("ram_weight_multiplier", -1.0, "filter_scheduler")
    register(node("h1", memory_mb=4096), node("h2", memory_mb=8192))
    set_node(engine, "h1", memory_mb_used=4096)
    driver = _without_ram_filter(make_driver(), conf)
    [dest] = driver.select_destinations(
        make_spec(flavor={"memory_mb": 2048, "root_gb": 1}))
    assert dest["host"] == "h2"
    assert "Planner and claim disagree (not a race)" in caplog.text
    assert "memory_mb: claim saw 4096 used + 2048 > limit 4096" in \
        caplog.text


def test_usage_written_without_a_generation_bump_is_a_race_not_a_bug(
        register, engine, make_driver, caplog):
    # A compute agent's write that leaves the generation alone: the plan
    # was made on usage the node no longer has.
    register(node("h1", memory_mb=4096), node("h2", memory_mb=2048))
    driver = make_driver()
    driver.host_manager.refresh()
    set_node(engine, "h1", memory_mb_used=4096)
    cycle = driver.cycle
    stale = driver.host_manager.cached_table()
    first = []

    def stale_first(fresh=False):
        if not first:
            first.append(1)
            return driver.host_manager.planning(refresh=False)
        return cycle(fresh)

    driver.cycle = stale_first
    assert stale.states[stale.positions[node_row(engine, "h1").id]] \
        .memory_mb_used == 0
    [dest] = driver.select_destinations(
        make_spec(flavor={"memory_mb": 2048, "root_gb": 1}))
    assert dest["host"] == "h2"
    assert "disagree" not in caplog.text


def test_a_refusal_after_leaving_out_a_disagreeing_node_says_so(
        register, engine, conf, make_driver):
    # The only host is full and no filter looks at RAM: the claim refuses
    # it (a disagreement), the re-plan has no host left. That is not "no
    # compute node is registered": h1 is, and the refusal must say what
    # happened to it.
    register(node("h1", memory_mb=4096))
    set_node(engine, "h1", memory_mb_used=4096)
    driver = _without_ram_filter(make_driver(), conf)
    with pytest.raises(exception.NoValidHost) as e:
        driver.select_destinations(
            make_spec(flavor={"memory_mb": 2048, "root_gb": 1}))
    message = str(e.value)
    assert "registered" not in message
    assert message.startswith(
        "No valid host: the planner and the claim disagreed on capacity "
        "(a bug, not a race), and no other host is left: compute node ")
    assert ("(h1, generation 0): memory_mb: claim saw 4096 used + 2048 > "
            "limit 4096") in message


def test_a_refusal_by_the_other_hosts_counts_the_node_left_out(
        register, engine, conf, make_driver):
    # h1 full (a disagreement: no RamFilter), h2 disabled: the re-plan's
    # counts are of h2 alone, and the refusal says where h1 went.
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    set_node(engine, "h1", memory_mb_used=4096)
    set_service(engine, "h2", disabled=True, disabled_reason="x")
    driver = _without_ram_filter(make_driver(), conf)
    with pytest.raises(exception.NoValidHost) as e:
        driver.select_destinations(
            make_spec(flavor={"memory_mb": 2048, "root_gb": 1}))
    message = str(e.value)
    assert message.startswith(
        "No valid host: 0/1 hosts passed. ComputeFilter removed 1 (service "
        "down or disabled); not counted: 1 node left out after the planner "
        "and the claim disagreed on capacity (a bug, not a race): compute "
        "node ")
    assert "(h1, generation 0): memory_mb: claim saw 4096" in message


@pytest.mark.parametrize("target", [
    {"requested_destination": {"host": "h1"}},
    {"requested_destination": {"host": "h1", "node": "h1"}}])
def test_a_node_left_out_after_a_disagreement_is_not_called_unknown(
        register, engine, conf, make_driver, target):
    # The requested host h1 is full and no filter looks at RAM: the claim
    # refuses it (a disagreement) and the re-plan runs without it. h1
    # exists: the refusal must say where it went, not that no compute
    # host or node is named h1 (a typo, for the operator).
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    set_node(engine, "h1", memory_mb_used=4096)
    driver = _without_ram_filter(make_driver(), conf)
    with pytest.raises(exception.NoValidHost) as e:
        driver.select_destinations(
            make_spec(flavor={"memory_mb": 2048, "root_gb": 1}, **target))
    message = str(e.value)
    assert "is named" not in message
    assert "(h1, generation 0): memory_mb: claim saw 4096" in message


def test_a_repeated_no_room_says_what_disagreed_not_lost_races(
        register, engine, conf, make_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    set_node(engine, "h1", memory_mb_used=4096)
    set_node(engine, "h2", memory_mb_used=4096)
    driver = _without_ram_filter(make_driver(), conf)
    with pytest.raises(exception.NoValidHost) as e:
        driver.select_destinations(
            make_spec(flavor={"memory_mb": 2048, "root_gb": 1}))
    message = str(e.value)
    assert "race" not in message.replace("not a race", "")
    assert "the planner and the claim disagreed on capacity" in message
    for host in ("h1", "h2"):
        assert (f"({host}, generation 0): memory_mb: claim saw 4096 used + "
                f"2048 > limit 4096, planner saw 4096 used and enforced no "
                f"limit (no filter for it)") in message
    # Nothing was claimed, and the table holds no planned usage.
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(
            models.allocations)).scalar() == 0
    assert {s.memory_mb_used for s in driver.host_manager.cached_table()
            .states} == {4096}


def _plan_on_a_claim_that_then_fails(driver, monkeypatch, write,
                                     a_memory_mb, b_memory_mb) -> dict:
    """Request a plans and assumes its claim on the one node, and waits;
    request b plans on a's assumed usage (generation + 1) and waits;
    ``write()`` changes the node in SQL (generation + 1): a's claim will
    lose. Then b claims — if it does not wait for a's claim to be over,
    which it must — and then a. :returns: each request's host or
    NoValidHost."""
    hm = driver.host_manager
    real_claim, real_assume = driver.claims.claim, hm.assume
    a_claiming, a_go = threading.Event(), threading.Event()
    b_planned, b_go = threading.Event(), threading.Event()
    assumes = []

    def gated_claim(to_claim, **kwargs):
        # a's first claim waits, planned and assumed.
        if to_claim[0].consumer_uuid.endswith("a") and \
                not a_claiming.is_set():
            a_claiming.set()
            assert a_go.wait(30)
        return real_claim(to_claim, **kwargs)

    def gated_assume(states):
        # b's first plan (the second of all) waits once assumed.
        real_assume(states)
        assumes.append(states)
        if len(assumes) == 2:
            b_planned.set()
            assert b_go.wait(30)

    monkeypatch.setattr(driver.claims, "claim", gated_claim)
    monkeypatch.setattr(hm, "assume", gated_assume)
    results: dict = {}

    def request(name, memory_mb):
        spec = make_spec(instance_uuids=[f"00000000-0000-4000-8000-"
                                         f"00000000000{name}"],
                         flavor={"memory_mb": memory_mb, "root_gb": 1})
        try:
            results[name] = driver.select_destinations(spec)[0]["host"]
        except exception.NoValidHost as e:
            results[name] = e

    a = threading.Thread(target=request, args=("a", a_memory_mb))
    a.start()
    assert a_claiming.wait(30)
    b = threading.Thread(target=request, args=("b", b_memory_mb))
    b.start()
    assert b_planned.wait(30)
    write()
    b_go.set()
    # Long enough for b's claim, were it made now (the fault); with the
    # fix b waits for a's claim instead, and this is only a delay.
    b.join(5)
    a_go.set()
    a.join(30)
    b.join(30)
    assert not a.is_alive() and not b.is_alive()
    return results


def test_a_claim_planned_on_a_failed_claim_is_not_made_on_another_write(
        register, engine, make_driver, monkeypatch):
    """A request plans on the usage an earlier request of its process
    assumed (generation + 1). If that claim fails, generation + 1 in SQL
    is someone else's write, not the claim the plan counted on: here a
    compute agent halving the node's memory. The later claim must lose
    and plan again, not fill the node past what it now has."""
    register(node("h1", memory_mb=4096))
    n = models.compute_nodes

    def shrink():     # the compute agent
        with engine.begin() as conn:
            conn.execute(n.update().values(
                memory_mb=2048, free_ram_mb=2048,
                generation=n.c.generation + 1))

    # b: 1024 + 3072 of 4096 as planned.
    results = _plan_on_a_claim_that_then_fails(
        make_driver(), monkeypatch, shrink, 1024, 3072)
    row = node_row(engine, "h1")
    assert row.memory_mb_used <= row.memory_mb, results


def test_a_claim_planned_on_a_failed_claim_keeps_max_instances_per_host(
        register, engine, conf, make_driver, monkeypatch):
    """The same with another scheduler's claim of two instances as the
    write: b planned on 1 instance (a's) on a host allowed 2, and must not
    make it 3."""
    conf.set_override("enabled_filters", ["NumInstancesFilter"],
                      "filter_scheduler")
    conf.set_override("max_instances_per_host", 2, "filter_scheduler")
    register(node("h1", memory_mb=8192))
    row = node_row(engine, "h1")

    def other_server():
        consume.claim(engine, [Claim(
            f"00000000-0000-4000-8000-00000000001{i}", row.id, "h1",
            row.generation, 1, 512, 1) for i in range(2)])

    results = _plan_on_a_claim_that_then_fails(
        make_driver(), monkeypatch, other_server, 512, 512)
    assert node_row(engine, "h1").running_vms <= 2, results


def test_an_error_after_the_assume_does_not_hold_later_claims(
        register, engine, make_driver, monkeypatch):
    """Request a fails after its usage is assumed on h1 and before its
    claim (here: telling the chooser). What it assumed must be settled
    and forgotten all the same: request b, planned on h1 next, claims
    at once instead of waiting for a claim that will never be over."""
    register(node("h1", memory_mb=4096))
    driver = make_driver()
    real_claiming = driver.chooser.claiming
    failed = []

    def claiming_fails_once(planned):
        if not failed:
            failed.append(planned)
            raise RuntimeError("fails after the assume")
        real_claiming(planned)

    monkeypatch.setattr(driver.chooser, "claiming", claiming_fails_once)
    with pytest.raises(RuntimeError, match="after the assume"):
        driver.select_destinations(make_spec(
            instance_uuids=["00000000-0000-4000-8000-00000000000a"]))
    results = []
    b = threading.Thread(target=lambda: results.append(
        driver.select_destinations(make_spec(
            instance_uuids=["00000000-0000-4000-8000-00000000000b"]))),
        daemon=True)
    b.start()
    b.join(10)
    assert not b.is_alive(), "b still waits for a's claim after 10 s"
    assert [r[0]["host"] for r in results] == ["h1"]
    assert node_row(engine, "h1").running_vms == 1
    assert driver.chooser._claiming == {}


def test_a_claim_counts_against_max_instances_per_host_beside_agent_stats(
        register, engine, conf, make_driver):
    """nova's compute reports its instance count twice, as the
    ``num_instances`` stat and as ``running_vms`` (nova's
    resource_tracker: ``running_vms = stats.num_instances``); a claim
    keeps ``running_vms`` current, not the agent's stats. nova's
    scheduler counts the instance it just placed until the compute
    reports again (HostState.consume_from_request); read from the stat,
    the claimed instance was forgotten at the next refresh and a second
    boot went to a host already at max_instances_per_host."""
    conf.set_override("enabled_filters", ["NumInstancesFilter"],
                      "filter_scheduler")
    conf.set_override("max_instances_per_host", 1, "filter_scheduler")
    register(node("h1", memory_mb=8192))
    set_node(engine, "h1", running_vms=0, stats=json.dumps(
        {"num_instances": "0", "io_workload": "0"}))
    driver = make_driver()
    driver.select_destinations(make_spec(
        instance_uuids=["00000000-0000-4000-8000-000000000001"]))
    with pytest.raises(exception.NoValidHost) as e:
        driver.select_destinations(make_spec(
            instance_uuids=["00000000-0000-4000-8000-000000000002"]))
    assert "NumInstancesFilter removed 1" in str(e.value)


def test_instances_on_one_node_assume_one_claim_on_it(register, engine,
                                                      make_driver,
                                                      monkeypatch):
    """Two instances planned on the only node: the table assumes both
    instances' usage and the generation bumped once, which is what the
    claim (one write of the node) leaves in SQL."""
    register(node("h0", memory_mb=8192))
    driver = make_driver()
    before = node_row(engine, "h0")
    assumed = []
    real_assume = driver.host_manager.assume

    def recording_assume(states):
        assumed.extend(states)
        real_assume(states)

    monkeypatch.setattr(driver.host_manager, "assume", recording_assume)
    driver.select_destinations(make_spec(
        instance_uuids=["00000000-0000-4000-8000-000000000001",
                        "00000000-0000-4000-8000-000000000002"],
        flavor={"memory_mb": 1024, "root_gb": 1}))
    after = node_row(engine, "h0")
    (state,) = assumed
    assert after.generation == before.generation + 1
    assert (state.generation, state.memory_mb_used, state.num_instances) == (
        after.generation, after.memory_mb_used, 2)


@pytest.mark.parametrize("num_instances", [1, 2])
def test_a_claim_whose_commit_reply_was_lost_is_not_made_twice(
        register, engine, make_driver, num_instances):
    """The database committed the claim, then the connection was lost
    before its reply (a restart under the COMMIT): the retry must find
    the consumers' claims (consumer_uuid is unique) and answer with them,
    not claim again. One instance goes through the group commit, two
    through consume.claim."""
    from oslo_db import exception as db_exc
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    driver = make_driver()
    real_claim = driver.claims.claim
    lost = []

    def commit_then_lose_the_reply(*args, **kwargs):
        real_claim(*args, **kwargs)
        if not lost:
            lost.append(True)
            raise db_exc.DBConnectionError("Lost connection to server "
                                           "during query")
    driver.claims.claim = commit_then_lose_the_reply
    uuids = [f"00000000-0000-4000-8000-00000000000{i}"
             for i in range(num_instances)]
    placed = driver.select_destinations(make_spec(
        flavor={"memory_mb": 2048, "root_gb": 1}, instance_uuids=uuids,
        num_instances=num_instances))
    assert lost
    assert [p["uuid"] for p in placed] == uuids
    held = allocations.placements(engine, uuids)
    assert sorted(held) == uuids
    assert {held[u].host for u in uuids} == {p["host"] for p in placed}
    used = sum(node_row(engine, h).memory_mb_used for h in ("h1", "h2"))
    assert used == 2048 * num_instances
    assert audit.audit_allocations(engine, driver.host_manager
                                   .default_ratios) == []
