"""chance_scheduler: random among up, enabled, not ignored hosts with room."""
from __future__ import annotations

import pytest

from scheduler import exception
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
        "placed); of the hosts left after placing the first 2, 0/1 hosts "
        "passed. RamFilter removed 1 (insufficient RAM: need 4096 MB)")
