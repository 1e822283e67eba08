"""select_destinations over a real RabbitMQ, against a scheduler-server
subprocess and a fleet in SQLite."""
from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.hosts.planned import Claim
from scheduler import exception
from scheduler.rpc import transport as rpc
from scheduler.db import models
from tests.functional.conftest import every_database
from tests.functional.conftest import node

FLAVOR = {"name": "m1.small", "memory_mb": 2048, "vcpus": 2, "root_gb": 20}


def _set_service(deployment, host: str, **values) -> None:
    services = models.services
    with deployment.engine.begin() as conn:
        conn.execute(services.update().where(services.c.host == host)
                     .values(**values))


def test_placements_fit_the_flavor_and_land_on_up_enabled_hosts(
        make_deployment):
    deployment = make_deployment()
    deployment.fleet(50)
    deployment.manage("service", "disable", "compute-00001",
                      "--reason", "maintenance")
    _set_service(deployment, "compute-00002", forced_down=True)
    deployment.start_server()

    result = deployment.api.select_destinations(
        {}, {"num_instances": 30, "flavor": FLAVOR})

    assert len(result) == 30
    hosts = {d["host"] for d in result}
    assert not hosts & {"compute-00001", "compute-00002"}
    nodes = deployment.nodes()
    for d in result:
        n = nodes[d["host"]]
        assert d["allocation"]["memory_mb"] == 2048
        assert n.memory_mb_used <= n.memory_mb * n.ram_allocation_ratio
        assert n.vcpus_used <= n.vcpus * n.cpu_allocation_ratio
    assert sorted(a.consumer_uuid for a in deployment.allocations()) == \
        sorted(d["uuid"] for d in result)
    # Usage in SQL is exactly the sum of the allocations.
    for host, n in nodes.items():
        mine = [d for d in result if d["host"] == host]
        assert n.memory_mb_used == 2048 * len(mine)


def test_a_refusal_says_which_filters_removed_which_hosts(make_deployment):
    deployment = make_deployment()
    deployment.fleet(20)
    deployment.manage("service", "disable", "compute-00003")
    deployment.start_server()

    with pytest.raises(exception.NoValidHost) as caught:
        deployment.api.select_destinations(
            {}, {"flavor": {"memory_mb": 10 ** 7, "vcpus": 1,
                            "root_gb": 1}})

    assert caught.value.message == (
        "No valid host: 0/20 hosts passed. ComputeFilter removed 1 "
        "(service down or disabled), RamFilter removed 19 (insufficient "
        "RAM: need 10000000 MB)")


@every_database
def test_multi_instance_request_is_all_or_nothing(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("small-1", memory_mb=4096),
                          node("small-2", memory_mb=4096)])
    deployment.start_server()
    flavor = {"memory_mb": 2048, "vcpus": 1, "root_gb": 10}

    with pytest.raises(exception.NoValidHost) as caught:
        deployment.api.select_destinations(
            {}, {"num_instances": 5, "flavor": flavor})
    assert "instance 5 of 5" in caught.value.message
    assert deployment.allocations() == []
    assert all(n.memory_mb_used == 0 for n in deployment.nodes().values())

    placed = deployment.api.select_destinations(
        {}, {"num_instances": 4, "flavor": flavor})
    assert sorted(d["host"] for d in placed) == [
        "small-1", "small-1", "small-2", "small-2"]


@every_database
def test_release_frees_capacity_once(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=2)])
    deployment.start_server()
    flavor = {"memory_mb": 2048, "vcpus": 1, "root_gb": 10}
    first = deployment.api.select_destinations(
        {}, {"num_instances": 2, "flavor": flavor})
    with pytest.raises(exception.NoValidHost):
        deployment.api.select_destinations({}, {"flavor": flavor})

    assert deployment.api.release({}, [first[0]["uuid"]]) == 1
    assert deployment.api.release({}, [first[0]["uuid"]]) == 0

    again = deployment.api.select_destinations({}, {"flavor": flavor})
    assert again[0]["host"] == "only"
    assert deployment.nodes()["only"].memory_mb_used == 4096


@every_database
def test_resending_the_same_consumers_claims_once(make_deployment):
    deployment = make_deployment()
    deployment.fleet(10)
    deployment.start_server()
    spec = {"instance_uuids": [str(uuid.uuid4()), str(uuid.uuid4())],
            "flavor": FLAVOR}

    first = deployment.api.select_destinations({}, spec)
    second = deployment.api.select_destinations({}, spec)

    assert [(d["uuid"], d["host"]) for d in first] == \
        [(d["uuid"], d["host"]) for d in second]
    assert len(deployment.allocations()) == 2
    used = sum(n.memory_mb_used for n in deployment.nodes().values())
    assert used == 2 * FLAVOR["memory_mb"]


@every_database
def test_a_re_send_after_a_release_takes_its_place_on_a_full_fleet(
        make_deployment):
    """The claims a re-sent request still holds are room for it: on two
    full hosts, the consumer released is placed again and the others keep
    their share, each counted once."""
    deployment = make_deployment()
    deployment.add_nodes([node("a", memory_mb=4096, vcpus=2),
                          node("b", memory_mb=4096, vcpus=2)])
    deployment.start_server()
    flavor = {"memory_mb": 2048, "vcpus": 1, "root_gb": 10}
    spec = {"instance_uuids": [str(uuid.uuid4()) for _ in range(4)],
            "flavor": flavor}
    deployment.api.select_destinations({}, spec)
    assert deployment.api.release({}, [spec["instance_uuids"][2]]) == 1

    again = deployment.api.select_destinations({}, spec)

    assert [d["uuid"] for d in again] == spec["instance_uuids"]
    assert sorted(d["host"] for d in again) == ["a", "a", "b", "b"]
    assert sorted(a.consumer_uuid for a in deployment.allocations()) == \
        sorted(spec["instance_uuids"])
    nodes = deployment.nodes()
    assert [(nodes[h].memory_mb_used, nodes[h].running_vms)
            for h in "ab"] == [(4096, 2), (4096, 2)]


@every_database
def test_a_re_send_held_on_a_deleted_node_is_placed_again(make_deployment):
    """A consumer whose claim sits on a node since deleted (soft-deleted
    row) holds no place: its re-sent request is placed afresh on a live
    node, the dead claim replaced in the same transaction, instead of
    being answered with the deleted node."""
    deployment = make_deployment()
    deployment.add_nodes([node("gone", memory_mb=4096, vcpus=2)])
    consumer = str(uuid.uuid4())
    n = models.compute_nodes
    with deployment.engine.connect() as conn:
        dead = conn.execute(sa.select(n).where(n.c.host == "gone")).one()
    consume.claim(deployment.engine, [Claim(
        consumer, dead.id, "gone", dead.generation, 1, 2048, 10)])
    with deployment.engine.begin() as conn:
        conn.execute(n.update().where(n.c.id == dead.id)
                     .values(deleted=dead.id))
    deployment.add_nodes([node("alive", memory_mb=4096, vcpus=2)])
    deployment.start_server()

    again = deployment.api.select_destinations({}, {
        "instance_uuids": [consumer],
        "flavor": {"memory_mb": 2048, "vcpus": 1, "root_gb": 10}})

    nodes = deployment.nodes()
    assert [(d["host"], d["allocation"]["compute_node_uuid"])
            for d in again] == [("alive", nodes["alive"].uuid)]
    assert [(a.consumer_uuid, a.compute_node_id)
            for a in deployment.allocations()] == [
        (consumer, nodes["alive"].id)]
    assert nodes["alive"].memory_mb_used == 2048


def test_legacy_request_spec_and_filter_properties(make_deployment):
    deployment = make_deployment()
    deployment.fleet(10)
    deployment.start_server()
    instance = str(uuid.uuid4())
    result = deployment.api.client.prepare(version="1.0").call(
        {}, "select_destinations",
        request_spec={"instance_type": dict(FLAVOR, flavorid="1"),
                      "instance_properties": {"uuid": instance,
                                              "project_id": "p1"},
                      "image": {"id": "img", "properties": {}},
                      "num_instances": 1},
        filter_properties={"ignore_hosts": ["compute-00001"]})
    assert result[0]["uuid"] == instance
    assert result[0]["host"] != "compute-00001"
    assert deployment.allocations()[0].project_id == "p1"


def test_rank_destinations_is_a_dry_run_with_weights_and_filter_counts(
        make_deployment):
    deployment = make_deployment()
    deployment.fleet(30)
    deployment.manage("service", "disable", "compute-00003")   # in az1
    deployment.start_server()

    ranking = deployment.api.rank_destinations(
        {}, {"flavor": FLAVOR, "availability_zone": "az1"}, limit=5)

    assert len(ranking["hosts"]) == 5
    weights = [h["weight"] for h in ranking["hosts"]]
    assert weights == sorted(weights, reverse=True)
    assert set(ranking["hosts"][0]["weights"]) == {
        "RAMWeigher", "CPUWeigher", "DiskWeigher"}
    steps = {f["name"]: f for f in ranking["filters"]}
    assert steps["AvailabilityZoneFilter"]["in"] == 30
    assert steps["AvailabilityZoneFilter"]["out"] == 10   # every third host
    assert steps["ComputeFilter"]["out"] == 9
    assert deployment.allocations() == []


def test_ping_names_the_server_and_driver(make_deployment):
    deployment = make_deployment(scheduler__driver="chance_scheduler")
    deployment.start_server(name="sched-ping")
    assert deployment.api.ping({}) == {
        "host": "sched-ping", "version": rpc.API_VERSION,
        "driver": "chance_scheduler"}
    assert deployment.api.ping({}, server="sched-ping")["host"] == \
        "sched-ping"


def test_a_client_capped_at_an_older_version_still_places(make_deployment):
    deployment = make_deployment(upgrade_levels__scheduler="1.0")
    deployment.fleet(5)
    deployment.start_server()

    placed = deployment.api.select_destinations({}, {"flavor": FLAVOR})

    with pytest.raises(exception.InvalidRequest) as caught:
        deployment.api.confirm({}, [placed[0]["uuid"]])
    assert caught.value.message == (
        "confirm needs RPC API 1.2 but [upgrade_levels] scheduler caps this "
        "client at 1.0")
    with pytest.raises(exception.InvalidRequest):
        deployment.api.rank_destinations({}, {"flavor": FLAVOR})
