"""chance_scheduler: random among up, enabled, not ignored hosts with room."""
from __future__ import annotations

import datetime

import pytest

from scheduler import exception
from scheduler.db import clock
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import make_spec
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_service


def _spec(memory_mb=4096, **kw):
    return make_spec(flavor={"memory_mb": memory_mb, "vcpus": 1,
                             "root_gb": 10}, **kw)


def _planned(driver, spec, times=30):
    hosts = driver.host_table()
    return {s.host.host for _ in range(times)
            for s in driver.plan(spec, hosts)}


def test_respects_capacity(register, engine, chance_driver):
    register(node("small", memory_mb=2048), node("big", memory_mb=8192),
             node("few-cpus", vcpus=1), node("no-disk", local_gb=5))
    spec = make_spec(flavor={"memory_mb": 4096, "vcpus": 2, "root_gb": 10})
    assert _planned(chance_driver, spec) == {"big"}
    [dest] = chance_driver.select_destinations(spec)
    assert dest["host"] == "big"
    assert node_row(engine, "big").memory_mb_used == 4096


def test_spreads_randomly_over_hosts_that_fit(register, chance_driver):
    register(*(node(f"h{i}") for i in range(4)))
    assert _planned(chance_driver, _spec(), times=200) == {
        "h0", "h1", "h2", "h3"}


def test_respects_ignore_hosts(register, chance_driver):
    register(node("h1"), node("h2"), node("h3"))
    assert _planned(chance_driver, _spec(ignore_hosts=["H1", "h3"])) == {
        "h2"}


def test_skips_down_and_disabled_hosts(register, engine, chance_driver):
    register(node("up"), node("disabled"), node("forced"))
    set_service(engine, "disabled", disabled=True)
    set_service(engine, "forced", forced_down=True)
    assert _planned(chance_driver, _spec()) == {"up"}


def test_instances_consume_capacity(register, engine, chance_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    dests = chance_driver.select_destinations(_spec(num_instances=2))
    assert sorted(d["host"] for d in dests) == ["h1", "h2"]
    assert len(allocation_rows(engine)) == 2


def test_no_room_is_no_valid_host(register, engine, chance_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=2048))
    with pytest.raises(exception.NoValidHost) as info:
        chance_driver.select_destinations(_spec(num_instances=2))
    assert "RamFilter removed" in info.value.message
    assert allocation_rows(engine) == []
    with pytest.raises(exception.NoValidHost) as info:
        chance_driver.select_destinations(_spec(ignore_hosts=["h1"]))
    assert info.value.message == (
        "No valid host: 0/2 hosts passed. ignore_hosts removed 1 (ignored "
        "by the request), RamFilter removed 1 (insufficient RAM: need "
        "4096 MB)")


GROUP = "eeeeeeee-0000-4000-8000-000000000001"


def test_a_hard_affinity_group_goes_to_its_members_host(register,
                                                        chance_driver):
    # Without the group filters each random pick would gamble on the claim's
    # group check and lose it as a "race" nearly every time.
    register(*[node(f"h{i:02}") for i in range(40)])
    group = {"uuid": GROUP, "policies": ["affinity"]}
    [first] = chance_driver.select_destinations(
        _spec(512, instance_group=group))
    later = [chance_driver.select_destinations(
        _spec(512, instance_group=group))[0]["host"] for _ in range(5)]
    assert later == [first["host"]] * 5


def test_a_hard_anti_affinity_request_spreads_its_own_instances(
        register, chance_driver):
    register(*[node(f"h{i}") for i in range(3)])
    group = {"uuid": GROUP, "policies": ["anti-affinity"]}
    dests = chance_driver.select_destinations(
        _spec(num_instances=3, instance_group=group))
    assert sorted(d["host"] for d in dests) == ["h0", "h1", "h2"]


def test_a_later_instance_refused_counts_the_hosts_left(register,
                                                        chance_driver):
    """The refusal of a later instance counts the hosts the earlier ones
    left, and says so, as filter_scheduler's does: not the ignored host
    and a RamFilter count that add up to 2 of 3 hosts."""
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096),
             node("h3", memory_mb=4096))
    with pytest.raises(exception.NoValidHost) as info:
        chance_driver.select_destinations(
            _spec(num_instances=3, ignore_hosts=["h3"]))
    assert info.value.message == (
        "No valid host for instance 3 of 3 (all or nothing: none was "
        "placed); with hosts found for the first 2, 0/1 remaining hosts "
        "passed. RamFilter removed 1 (insufficient RAM: need 4096 MB)")


def test_a_forced_host_is_taken_as_filter_scheduler_takes_it(
        register, engine, chance_driver):
    """Forcing is targeting's rule (scheduler.decide.targeting), one for every
    driver: a forced host that is enabled but down skips the filters and
    is placed on, as filter_scheduler does; only the claim's capacity
    check still holds."""
    register(node("h1"), node("h2"))
    with engine.connect() as conn:
        now = clock.db_time(conn)
    set_service(engine, "h1", last_seen_up=now - datetime.timedelta(hours=1))
    [dest] = chance_driver.select_destinations(_spec(force_hosts=["h1"]))
    assert dest["host"] == "h1"
    assert node_row(engine, "h1").memory_mb_used == 4096


def test_a_full_forced_host_is_still_refused(register, engine,
                                             chance_driver):
    """Forcing skips the filters, never the claim's capacity check."""
    register(node("h1"), node("h2"))
    with pytest.raises(exception.NoValidHost):
        chance_driver.select_destinations(
            _spec(memory_mb=65536, force_hosts=["h1"]))
    assert allocation_rows(engine) == []
    assert node_row(engine, "h1").memory_mb_used == 0


def test_skips_the_hosts_a_retry_already_tried(register, chance_driver):
    """A rescheduled build (nova's conductor after a failed boot) lists
    the hosts it tried in ``retry``; filter_scheduler's RetryFilter leaves
    them out, and picking at random must not send the build back there."""
    register(node("h1"), node("h2"), node("h3"))
    spec = _spec(retry={"num_attempts": 2,
                        "hosts": [["h1", "h1"], ["h3", "h3"]]})
    assert _planned(chance_driver, spec) == {"h2"}


def test_returns_random_alternates_that_fit_when_asked(register, conf,
                                                       chance_driver):
    """nova's ChanceScheduler returned up to ``max_attempts`` - 1 random
    alternates per instance, never a selected host, so its conductor can
    reschedule a failed build; the RPC API's contract: with return_alternates
    each destination has ``alternates``, shaped as filter_scheduler's."""
    register(node("h0"), node("h1"), node("h2"), node("h3"),
             node("small", memory_mb=2048))
    dests = chance_driver.select_destinations(
        _spec(num_instances=2, return_alternates=True))
    selected = {d["host"] for d in dests}
    for dest in dests:
        hosts = [a["host"] for a in dest["alternates"]]
        assert len(hosts) == conf.scheduler.max_attempts - 1 == 2
        assert len(set(hosts)) == 2
        assert not set(hosts) & selected
        assert "small" not in hosts           # no room there
        for a in dest["alternates"]:
            assert set(a) == {"host", "nodename", "compute_node_uuid",
                              "limits"}
    [dest] = chance_driver.select_destinations(_spec())
    assert "alternates" not in dest
