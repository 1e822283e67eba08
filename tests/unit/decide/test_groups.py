"""Server groups through the filter scheduler on a real SQLite database:
spreading and packing within a request, members claimed by earlier requests,
and refusals that claim nothing."""
from __future__ import annotations

import dataclasses

import sqlalchemy as sa
import pytest

from scheduler.claims import lifecycle
from scheduler.db import allocations
from scheduler import exception
from scheduler.db import models
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import make_spec
from tests.unit.fakes import node
from tests.unit.fakes import node_row

G = "eeeeeeee-0000-4000-8000-000000000001"
G2 = "eeeeeeee-0000-4000-8000-000000000002"
U = [f"ffffffff-0000-4000-8000-{i:012d}" for i in range(12)]


def _spec(policy, uuids=None, num=None, group_uuid=G, hosts=(),
          max_per_host=None, memory_mb=1024):
    group = {"policies": [policy], "hosts": list(hosts)}
    if group_uuid is not None:
        group["uuid"] = group_uuid
    if max_per_host is not None:
        group["rules"] = {"max_server_per_host": max_per_host}
    kw = {}
    if uuids is not None:
        kw["instance_uuids"] = list(uuids)
    if num is not None:
        kw["num_instances"] = num
    return make_spec(flavor={"memory_mb": memory_mb, "vcpus": 1,
                             "root_gb": 10},
                     instance_group=group, **kw)


def _hosts(dests):
    return [d["host"] for d in dests]


def _group_rows(engine):
    t = models.claim_groups
    with engine.connect() as conn:
        return {r.uuid: r.generation for r in conn.execute(sa.select(t))}


def _untouched(engine, *hosts):
    for host in hosts:
        row = node_row(engine, host)
        assert (row.generation, row.memory_mb_used, row.running_vms) == (
            0, 0, 0), host


def _register3(register):
    """Three hosts; the weighers alone would stack small instances on
    h1."""
    register(node("h1", memory_mb=32768), node("h2", memory_mb=16384),
             node("h3", memory_mb=16384))


def test_anti_affinity_spreads_one_request_over_distinct_hosts(
        register, engine, filter_driver):
    _register3(register)
    dests = filter_driver.select_destinations(
        _spec("anti-affinity", uuids=U[:3]))
    assert sorted(_hosts(dests)) == ["h1", "h2", "h3"]
    rows = allocation_rows(engine)
    assert {r.consumer_uuid for r in rows} == set(U[:3])
    assert {r.group_uuid for r in rows} == {G}
    assert _group_rows(engine) == {G: 1}
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h1": 1, "h2": 1, "h3": 1}


def test_without_a_group_the_same_request_packs(register, filter_driver):
    # the control for the test above: the weighers alone stack on h1
    register(node("h1", memory_mb=32768), node("h2", memory_mb=16384),
             node("h3", memory_mb=16384))
    spec = make_spec(flavor={"memory_mb": 1024, "vcpus": 1, "root_gb": 10},
                     num_instances=3)
    assert _hosts(filter_driver.select_destinations(spec)) == ["h1"] * 3


def test_anti_affinity_beats_the_weighers(register, filter_driver):
    register(node("h1", memory_mb=32768), node("h2", memory_mb=16384),
             node("h3", memory_mb=16384))
    dests = filter_driver.select_destinations(
        _spec("anti-affinity", num=3))
    assert sorted(_hosts(dests)) == ["h1", "h2", "h3"]


def test_more_members_than_hosts_is_refused_and_claims_nothing(
        register, engine, filter_driver):
    _register3(register)
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec("anti-affinity", uuids=U[:4]))
    message = info.value.message
    assert "instance 4 of 4" in message
    assert ("ServerGroupAntiAffinityFilter removed 1 (server group "
            "anti-affinity: host already holds a member)") in message
    assert allocation_rows(engine) == []
    assert _group_rows(engine) == {}
    _untouched(engine, "h1", "h2", "h3")


def test_max_server_per_host_two(register, engine, filter_driver):
    register(node("h1", memory_mb=16384), node("h2", memory_mb=16384))
    dests = filter_driver.select_destinations(
        _spec("anti-affinity", num=4, max_per_host=2))
    assert sorted(_hosts(dests)) == ["h1", "h1", "h2", "h2"]
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec("anti-affinity", num=1, max_per_host=2))
    assert "ServerGroupAntiAffinityFilter removed 2" in info.value.message
    assert len(allocation_rows(engine)) == 4


def test_affinity_request_of_three_lands_on_one_host(register, engine,
                                                     filter_driver):
    # each instance's usage makes the next one prefer another host, unless
    # the group holds them together
    register(node("h1", memory_mb=8192), node("h2", memory_mb=8192),
             node("h3", memory_mb=8192))
    dests = filter_driver.select_destinations(
        _spec("affinity", uuids=U[:3], memory_mb=2048))
    hosts = _hosts(dests)
    assert len(set(hosts)) == 1 and len(hosts) == 3
    row = node_row(engine, hosts[0])
    assert (row.memory_mb_used, row.running_vms, row.generation) == (
        6144, 3, 1)
    assert _group_rows(engine) == {G: 1}


def test_affinity_that_does_not_fit_one_host_is_refused(register, engine,
                                                        filter_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec("affinity", num=3, memory_mb=2048))
    # the second instance saw only the first one's host (the affinity
    # filter), so the third finds that host full
    assert info.value.message == (
        "No valid host for instance 3 of 3 (all or nothing: none was "
        "placed); with hosts found for the first 2, 0/1 remaining hosts "
        "passed. RamFilter removed 1 (insufficient RAM: need 2048 MB)")
    assert allocation_rows(engine) == []
    _untouched(engine, "h1", "h2")


def test_anti_affinity_sees_members_claimed_by_earlier_requests(
        register, engine, filter_driver):
    _register3(register)
    first = filter_driver.select_destinations(
        _spec("anti-affinity", uuids=U[:2]))
    second = filter_driver.select_destinations(
        _spec("anti-affinity", uuids=U[2:3]))
    assert sorted(_hosts(first) + _hosts(second)) == ["h1", "h2", "h3"]
    assert _group_rows(engine) == {G: 2}
    # the group is full now: the next member is refused, by the filter
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(
            _spec("anti-affinity", uuids=U[3:4]))
    assert info.value.message == (
        "No valid host: 0/3 hosts passed. ServerGroupAntiAffinityFilter "
        "removed 3 (server group anti-affinity: host already holds a "
        "member)")
    # releasing a member frees its host for the group
    lifecycle.release(engine, [U[0]])
    [dest] = filter_driver.select_destinations(
        _spec("anti-affinity", uuids=U[3:4]))
    assert dest["host"] == _hosts(first)[0]


def test_other_groups_do_not_count(register, engine, filter_driver):
    register(node("h1", memory_mb=16384))
    filter_driver.select_destinations(_spec("anti-affinity", uuids=U[:1]))
    [dest] = filter_driver.select_destinations(
        _spec("anti-affinity", uuids=U[1:2], group_uuid=G2))
    assert dest["host"] == "h1"
    assert _group_rows(engine) == {G: 1, G2: 1}


def test_affinity_sees_members_claimed_by_earlier_requests(
        register, engine, filter_driver):
    register(node("small", memory_mb=8192))
    [first] = filter_driver.select_destinations(
        _spec("affinity", uuids=U[:1]))
    assert first["host"] == "small"
    # a roomier host arrives; the weighers alone would pick it
    register(node("big", memory_mb=65536, vcpus=64, local_gb=1000))
    dests = filter_driver.select_destinations(
        _spec("affinity", uuids=U[1:3]))
    assert _hosts(dests) == ["small", "small"]
    other = make_spec(flavor={"memory_mb": 1024, "vcpus": 1,
                              "root_gb": 10})
    assert _hosts(filter_driver.select_destinations(other)) == ["big"]


def test_caller_sent_hosts_count_as_members(register, engine,
                                            filter_driver):
    _register3(register)
    dests = filter_driver.select_destinations(
        _spec("anti-affinity", num=2, hosts=["h2"]))
    assert sorted(_hosts(dests)) == ["h1", "h3"]


def test_a_group_without_uuid_still_spreads_within_one_request(
        register, engine, filter_driver):
    register(node("h1", memory_mb=32768), node("h2", memory_mb=16384),
             node("h3", memory_mb=16384))
    dests = filter_driver.select_destinations(
        _spec("anti-affinity", uuids=U[:3], group_uuid=None))
    assert sorted(_hosts(dests)) == ["h1", "h2", "h3"]
    assert {r.group_uuid for r in allocation_rows(engine)} == {None}
    assert _group_rows(engine) == {}
    with pytest.raises(exception.NoValidHost):
        filter_driver.select_destinations(
            _spec("anti-affinity", num=4, group_uuid=None))
    assert len(allocation_rows(engine)) == 3


def test_a_group_without_uuid_packs_for_affinity(register, engine,
                                                  filter_driver):
    register(node("h1", memory_mb=8192), node("h2", memory_mb=8192))
    dests = filter_driver.select_destinations(
        _spec("affinity", num=3, group_uuid=None, memory_mb=2048))
    assert len(set(_hosts(dests))) == 1


@pytest.mark.parametrize("policy", ["soft-affinity", "soft-anti-affinity"])
def test_soft_policies_take_no_group_lock(register, engine, filter_driver,
                                          policy):
    register(node("h1", memory_mb=16384))
    filter_driver.select_destinations(_spec(policy, num=2))
    assert len(allocation_rows(engine)) == 2
    assert {r.group_uuid for r in allocation_rows(engine)} == {G}
    assert _group_rows(engine) == {}


def test_resending_held_members_returns_them(register, engine,
                                             filter_driver):
    _register3(register)
    spec = _spec("anti-affinity", uuids=U[:3])
    first = filter_driver.select_destinations(spec)
    # the group's own members must not block their re-sent request
    again = filter_driver.select_destinations(spec)
    assert _hosts(again) == _hosts(first)
    assert len(allocation_rows(engine)) == 3


def test_partially_held_request_keeps_anti_affinity_room(register,
                                                         filter_driver):
    register(node("h1", memory_mb=16384), node("h2", memory_mb=16384))
    filter_driver.select_destinations(_spec("anti-affinity", uuids=U[:1]))
    dests = filter_driver.select_destinations(_spec("anti-affinity",
                                                    uuids=U[:2]))
    assert sorted(_hosts(dests)) == ["h1", "h2"]


# --- instance_group.members (nova: the members on a host count) ---------------

def _place(driver, uuid, host, group_uuid=None, policy="anti-affinity"):
    """An instance placed on ``host`` by an earlier request; in group
    ``group_uuid`` if given, else in no group this service knows."""
    kw = {}
    if group_uuid is not None:
        kw["instance_group"] = {"uuid": group_uuid, "policies": [policy]}
    [dest] = driver.select_destinations(make_spec(
        instance_uuids=[uuid], force_hosts=[host],
        flavor={"memory_mb": 1024, "vcpus": 1, "root_gb": 10}, **kw))
    assert dest["host"] == host


def _with_members(spec_kw, members):
    spec = _spec(**spec_kw)
    group = spec.to_primitive()["instance_group"]
    group["members"] = members
    return make_spec(flavor={"memory_mb": 1024, "vcpus": 1, "root_gb": 10},
                     instance_group=group,
                     instance_uuids=list(spec.instance_uuids))


def test_anti_affinity_avoids_the_hosts_of_the_named_members(
        register, filter_driver):
    """Members the caller names (nova sends them) count even when their
    claims carry no group: their hosts are avoided, as nova's
    ServerGroupAntiAffinityFilter does with host_state.instances."""
    _register3(register)
    _place(filter_driver, U[0], "h1")
    _place(filter_driver, U[1], "h2")
    spec = _with_members({"policy": "anti-affinity", "uuids": [U[2]],
                          "group_uuid": None}, [U[0], U[1].upper()])
    [dest] = filter_driver.select_destinations(spec)
    assert dest["host"] == "h3"
    # without the members the weighers would have chosen h1 (the control)
    [dest] = filter_driver.select_destinations(_spec(
        "anti-affinity", uuids=[U[3]], group_uuid=None))
    assert dest["host"] == "h1"


def test_anti_affinity_member_named_and_claimed_for_the_group_counts_once(
        register, filter_driver):
    _register3(register)
    _place(filter_driver, U[0], "h1", group_uuid=G)
    spec = _with_members({"policy": "anti-affinity", "uuids": [U[1]],
                          "max_per_host": 2}, [U[0]])
    [dest] = filter_driver.select_destinations(spec)
    assert dest["host"] == "h1"     # 1 member there, 2 allowed


def test_affinity_follows_the_named_members(register, filter_driver):
    _register3(register)
    _place(filter_driver, U[0], "h3")
    spec = _with_members({"policy": "affinity", "uuids": [U[1]],
                          "group_uuid": None}, [U[0]])
    [dest] = filter_driver.select_destinations(spec)
    assert dest["host"] == "h3"


def test_named_members_holding_no_claim_are_on_no_host(register,
                                                       filter_driver):
    _register3(register)
    spec = _with_members({"policy": "affinity", "uuids": [U[1]],
                          "group_uuid": None}, [U[5]])
    [dest] = filter_driver.select_destinations(spec)
    assert dest["host"] == "h1"     # nothing to follow: the weighers decide


def test_a_forced_host_that_breaks_a_hard_group_is_refused_at_once(
        register, engine, filter_driver):
    """Forcing skips the group filters, the claim keeps the group: that is
    a refusal of the request, said as such, not "lost the claim race 6
    times to concurrent requests" after re-planning onto the same host."""
    _register3(register)
    filter_driver.select_destinations(
        _spec("anti-affinity", uuids=[U[0]]))
    [first] = [r.compute_node_id for r in allocation_rows(engine)]
    host = next(h for h in ("h1", "h2", "h3")
                if node_row(engine, h).id == first)
    spec = dataclasses.replace(_spec("anti-affinity", uuids=[U[1]]),
                               force_hosts=(host,))
    with pytest.raises(exception.NoValidHost) as info:
        filter_driver.select_destinations(spec)
    assert info.value.message == (
        f"No valid host: a forced host would break its server group: "
        f"server group {G}: host {host} would hold 2 members, at most 1 "
        f"allowed")
    assert len(allocation_rows(engine)) == 1


@pytest.mark.parametrize("nova_hosts", [(), ("h1",)])
def test_a_member_resized_on_its_own_host_is_not_its_own_neighbour(
        register, engine, filter_driver, nova_hosts):
    """nova's anti-affinity filter passes the host the moving instance is
    on (a resize to the same host, allow_resize_to_same_host): it is not a
    second member there. nova's group ``hosts`` name that host too."""
    register(node("h1", memory_mb=8192), node("h2", memory_mb=1024))
    filter_driver.select_destinations(_spec("anti-affinity", uuids=U[:1]))
    assert node_row(engine, "h1").memory_mb_used == 1024
    # Bigger, as nova's 4.x API sends it (move unsaid): only h1 has room.
    resize = dataclasses.replace(
        _spec("anti-affinity", uuids=U[:1], hosts=nova_hosts,
              memory_mb=2048), move=None)

    dests = filter_driver.select_destinations(resize)

    assert _hosts(dests) == ["h1"]
    [row] = allocation_rows(engine)
    assert row.source_node_id == node_row(engine, "h1").id
