"""Draining a host all or nothing, and "how many more fit", through a real
server: a drain that one-by-one moves would strand is planned whole; group
members move as their policy says; applied, every move is claimed at once
and the host disabled; a re-send gets the same plan; cancel gives back the
moves not begun. Capacity counts what a real request would get. What
claims (the drain's one transaction, its groups, its cancel) runs on every
database; the rest on SQLite."""
from __future__ import annotations

import json

import pytest

from scheduler import exception
from scheduler.db import models
from tests.functional.conftest import every_database
from tests.functional.conftest import node

GB = 1024


def flavor(memory_gb: int) -> dict:
    return {"memory_mb": memory_gb * GB, "vcpus": 1, "root_gb": 1}


@pytest.fixture
def cloud(make_deployment):
    # One best host per decision (no random pick among the best), so the
    # one-by-one moves below go where nova's weighers send them.
    deployment = make_deployment(filter_scheduler__host_subset_size=1)
    yield deployment
    deployment.stop_servers()


def hosts(cloud, **memory_gb: int) -> None:
    cloud.add_nodes([node(h, vcpus=64, memory_mb=gb * GB, local_gb=100)
                     for h, gb in memory_gb.items()])
    cloud.start_server()


def boot(cloud, memory_gb: int, host: str, group: dict | None = None) -> str:
    spec = {"flavor": flavor(memory_gb), "force_hosts": [host]}
    if group:
        spec["instance_group"] = group
    [placed] = cloud.api.select_destinations({}, spec)
    cloud.api.confirm({}, [placed["uuid"]])
    return placed["uuid"]


def used_gb(cloud) -> dict[str, int]:
    return {h: n.memory_mb_used // GB for h, n in cloud.nodes().items()}


def audit_is_clean(cloud) -> bool:
    return cloud.manage("allocations", "audit", check=False).returncode == 0


def service(cloud, host: str):
    with cloud.engine.connect() as conn:
        s = models.services
        return conn.execute(s.select().where(s.c.host == host)).one()


def destinations(plan: dict) -> dict[str, str]:
    return {m["consumer_uuid"]: m["to"]["host"] for m in plan["moves"]}


@every_database
def test_a_drain_one_by_one_moves_would_strand_is_planned_whole(cloud):
    # The drained host holds a 3 GB and two 1 GB instances; x has 3 GB
    # free, y 2 GB: just room for all three, only if the big one goes to x.
    hosts(cloud, drained=8, x=3, y=2)
    big = boot(cloud, 3, "drained")
    small = [boot(cloud, 1, "drained") for _ in range(2)]

    # One by one, as an operator live-migrates today: the small ones go
    # where there is most room (x), and the big one then fits nowhere.
    moved = [cloud.api.select_destinations({}, {
        "flavor": flavor(1), "instance_uuids": [u],
        "ignore_hosts": ["drained"], "move": True})[0]["host"]
        for u in small]
    assert moved[0] == "x"
    with pytest.raises(exception.NoValidHost):
        cloud.api.select_destinations({}, {
            "flavor": flavor(3), "instance_uuids": [big],
            "ignore_hosts": ["drained"], "move": True})
    assert cloud.api.revert_move({}, small) == 2

    plan = cloud.api.plan_drain({}, "drained")
    assert not plan["applied"]
    assert destinations(plan) == {big: "x", small[0]: "y", small[1]: "y"}
    assert used_gb(cloud) == {"drained": 5, "x": 0, "y": 0}, "a dry run"

    applied = cloud.api.plan_drain({}, "drained", apply=True)
    assert destinations(applied) == destinations(plan)
    assert used_gb(cloud) == {"drained": 5, "x": 3, "y": 2}
    assert (service(cloud, "drained").disabled,
            service(cloud, "drained").disabled_reason) == (True, "draining")
    assert audit_is_clean(cloud)
    # The same drain again: the plan it applied, nothing claimed twice.
    assert cloud.api.plan_drain({}, "drained", apply=True) == applied
    assert used_gb(cloud) == {"drained": 5, "x": 3, "y": 2}


@every_database
def test_a_drain_that_cannot_be_placed_names_the_instance_and_claims_nothing(
        cloud):
    hosts(cloud, drained=8, x=2, y=2)
    big = boot(cloud, 3, "drained")
    boot(cloud, 1, "drained")
    with pytest.raises(exception.NoValidHost) as refused:
        cloud.api.plan_drain({}, "drained", apply=True)
    message = str(refused.value)
    assert f"instance {big} (1 vCPU, 3072 MB, 1 GB)" in message
    assert "of the drain of host drained" in message
    assert "nothing was claimed" in message
    assert "RamFilter removed 2 (insufficient RAM" in message
    assert used_gb(cloud) == {"drained": 4, "x": 0, "y": 0}
    assert not service(cloud, "drained").disabled


@every_database
def test_affinity_members_move_together_anti_affinity_members_apart(cloud):
    hosts(cloud, drained=16, a=4, b=4, c=4, d=1)
    together = {"uuid": "11111111-1111-4111-8111-111111111111",
                "policies": ["affinity"]}
    apart = {"uuid": "22222222-2222-4222-8222-222222222222",
             "policies": ["anti-affinity"]}
    pair = [boot(cloud, 1, "drained", together) for _ in range(2)]
    spread = [boot(cloud, 1, "drained", apart)]
    # The third anti-affinity member stays on a: a is no place for the
    # one that moves.
    staying = boot(cloud, 1, "a", apart)

    moves = destinations(cloud.api.plan_drain({}, "drained", apply=True))
    assert moves[pair[0]] == moves[pair[1]]
    assert moves[spread[0]] != "a"
    assert staying not in moves
    assert audit_is_clean(cloud)


@every_database
def test_nova_style_move_requests_get_the_planned_claims_and_cancel_spares_them(
        cloud):
    hosts(cloud, drained=8, x=4, y=4)
    instances = [boot(cloud, 1, "drained") for _ in range(3)]
    plan = destinations(cloud.api.plan_drain({}, "drained", apply=True))
    assert used_gb(cloud) == {"drained": 3, "x": 2, "y": 1} or \
        used_gb(cloud) == {"drained": 3, "x": 1, "y": 2}

    # The move of the first instance, asked for its planned host (what
    # `openstack server migrate --live-migration --host` makes nova ask):
    # the planned claim comes back, no second one.
    first = instances[0]
    [answer] = cloud.api.select_destinations({}, {
        "flavor": flavor(1), "instance_uuids": [first],
        "ignore_hosts": ["drained"],
        "requested_destination": {"host": plan[first]}})
    assert answer["host"] == plan[first]
    assert sum(used_gb(cloud).values()) == 6

    # Cancelled: the two moves not begun are given back, the begun one
    # stays; the host is enabled again.
    assert cloud.api.cancel_drain({}, "drained") == 2
    assert cloud.api.cancel_drain({}, "drained") == 0
    assert used_gb(cloud)[plan[first]] >= 1
    assert sum(used_gb(cloud).values()) == 4
    assert not service(cloud, "drained").disabled
    assert audit_is_clean(cloud)


def test_a_host_with_nothing_on_it_drains_to_an_empty_plan(cloud):
    hosts(cloud, empty=4, x=4)
    assert cloud.api.plan_drain({}, "EMPTY") == {
        "host": "empty", "moves": [], "applied": False}
    with pytest.raises(exception.InvalidRequest) as unknown:
        cloud.api.plan_drain({}, "nosuchhost")
    assert str(unknown.value).splitlines()[0] == \
        "host: no compute host 'nosuchhost'"


def test_a_draining_host_cannot_be_drained_otherwise(cloud):
    hosts(cloud, drained=4, x=4)
    boot(cloud, 1, "drained")
    cloud.api.plan_drain({}, "drained", apply=True)
    with pytest.raises(exception.InvalidRequest) as refused:
        cloud.api.plan_drain({}, "drained", same_aggregate=True)
    assert "already draining with same_aggregate False" in str(refused.value)


def test_capacity_counts_what_fits_by_zone_and_without_a_host(cloud):
    cloud.add_nodes([node("p1", vcpus=64, memory_mb=8 * GB, zone="az1"),
                     node("p2", vcpus=64, memory_mb=5 * GB, zone="az1"),
                     node("q1", vcpus=64, memory_mb=4 * GB, zone="az2")])
    cloud.start_server()
    boot(cloud, 1, "p1")
    boot(cloud, 2, "p2")

    answer = cloud.api.capacity({}, {"flavor": flavor(2)})
    # p1: 7 GB free -> 3, p2: 3 GB -> 1, q1: 4 GB -> 2.
    assert (answer["total"], answer["by_zone"]) == (6, {"az1": 4, "az2": 2})

    # Without p2, its 2 GB instance goes first (to p1, most room): p1
    # then has 5 GB -> 2, q1 2.
    answer = cloud.api.capacity({}, {"flavor": flavor(2)},
                                without_hosts=["p2"])
    assert (answer["total"], answer["by_zone"]) == (4, {"az1": 2, "az2": 2})
    assert used_gb(cloud) == {"p1": 1, "p2": 2, "q1": 0}, "nothing claimed"

    none = cloud.api.capacity({}, {"flavor": flavor(16)})
    assert none["total"] == 0
    assert "RamFilter removed 3 (insufficient RAM" in none["why"]


def test_the_cli_shows_the_plan_applies_and_cancels(cloud):
    hosts(cloud, drained=8, x=4)
    instance = boot(cloud, 1, "drained")
    dry = cloud.client("host", "drain", "drained", check=True).stdout
    assert instance in dry and "nothing claimed" in dry
    applied = json.loads(cloud.client("--json", "host", "drain", "drained",
                                      "--apply", check=True).stdout)
    assert destinations(applied) == {instance: "x"}
    out = cloud.client("host", "cancel-drain", "drained", check=True).stdout
    assert out.strip() == "released 1 planned move(s)"
    fit = cloud.client("capacity", "--flavor", "m1.small", check=True).stdout
    assert fit.splitlines()[0] == "5 more fit, on 2 host(s)"
    missing = cloud.client("capacity", "--flavor", "m9.huge")
    assert missing.returncode == 1
    assert "--flavor: no flavor 'm9.huge'" in missing.stderr
