"""Request fields that used to pass validation and then be ignored, through
scheduler-server over RabbitMQ on every database: requested_destination
aggregates, the named members of a server group, the group hint."""
from __future__ import annotations

import json
import uuid

import pytest

from scheduler import exception
from tests.functional.conftest import node

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}


def _one(deployment, **spec) -> str:
    [dest] = deployment.api.select_destinations(
        {}, {"flavor": FLAVOR, **spec})
    return dest["host"]


def _aggregate(deployment, name: str, *hosts: str) -> str:
    """Create an aggregate the way an operator does; its uuid."""
    deployment.manage("aggregate", "create", name)
    for host in hosts:
        deployment.manage("aggregate", "add-host", name, host)
    listed = json.loads(deployment.manage("--json", "aggregate",
                                          "list").stdout)
    return next(a["uuid"] for a in listed if a["name"] == name)


def test_requested_destination_aggregates_restrict_the_hosts(
        make_deployment):
    deployment = make_deployment()
    # the weighers alone pick h1 (most free RAM), then h2, then h3
    deployment.add_nodes([node("h1", memory_mb=16384), node("h2",
                          memory_mb=8192), node("h3", memory_mb=4096)])
    _aggregate(deployment, "gpu", "h2")
    ssd = _aggregate(deployment, "ssd", "h3")
    _aggregate(deployment, "rack1", "h1", "h3")
    deployment.start_server()

    def placed(aggregates):
        return _one(deployment,
                    requested_destination={"aggregates": aggregates})

    assert _one(deployment) == "h1"
    # one entry: in any of its aggregates
    assert placed(["gpu,ssd"]) == "h2"
    # entries are ANDed; nova names aggregates by uuid, names work too
    assert placed(["gpu, " + ssd, "rack1"]) == "h3"
    with pytest.raises(exception.NoValidHost) as caught:
        placed(["gpu", "rack1"])
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. requested_destination removed 2 "
        "(in none of the requested aggregates gpu), requested_destination "
        "removed 1 (in none of the requested aggregates rack1)")
    # an empty name is a bad request, named; nothing is claimed and the
    # server keeps serving
    claims_before = len(deployment.allocations())
    with pytest.raises(exception.InvalidRequest) as caught:
        placed(["gpu,,ssd"])
    assert caught.value.message.startswith(
        "spec.requested_destination.aggregates.0: 'gpu,,ssd' is not a "
        "comma-separated list")
    assert len(deployment.allocations()) == claims_before
    assert placed([ssd]) == "h3"


def test_anti_affinity_avoids_the_hosts_of_the_named_members(
        make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("h1", memory_mb=16384), node("h2",
                          memory_mb=8192), node("h3", memory_mb=4096)])
    deployment.start_server()
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    # two instances placed earlier, in no group this service knows of
    assert _one(deployment, instance_uuids=[first]) == "h1"
    assert _one(deployment, instance_uuids=[second],
                force_hosts=["h2"]) == "h2"

    group = {"policies": ["anti-affinity"], "members": [first, second]}
    assert _one(deployment, instance_group=group) == "h3"
    group = {"policies": ["affinity"], "members": [second]}
    assert _one(deployment, instance_group=group) == "h2"


def test_group_hint_alone_is_refused_naming_it(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("h1")])
    deployment.start_server()
    group = str(uuid.uuid4())
    with pytest.raises(exception.InvalidRequest) as caught:
        _one(deployment, scheduler_hints={"group": group})
    assert caught.value.message.startswith(
        "spec.scheduler_hints.group: the server group's policy is not known "
        "here")
    assert deployment.allocations() == []
    # with the group it names the group's uuid: its claims carry it
    _one(deployment, scheduler_hints={"group": group},
         instance_group={"policies": ["anti-affinity"]})
    assert [r.group_uuid for r in deployment.allocations()] == [group]
