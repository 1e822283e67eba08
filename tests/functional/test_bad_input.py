"""Malformed calls get a clean error naming the problem, nothing is claimed,
and the server keeps answering valid calls."""
from __future__ import annotations

import oslo_messaging as messaging
import pytest

from scheduler import exception
from scheduler import rpc

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}

BAD_SPECS = [
    ("not a dict", "spec: expected an object, got str"),
    ({}, "spec: 'flavor' is a required property"),
    ({"flavor": {"memory_mb": -1, "vcpus": 1, "root_gb": 1}},
     "spec.flavor.memory_mb: -1 is less than the minimum of 0"),
    ({"flavor": {"memory_mb": "lots", "vcpus": 1, "root_gb": 1}},
     "spec.flavor.memory_mb: 'lots' is not of type 'integer'"),
    ({"flavor": FLAVOR, "instance_uuids": []},
     "spec.instance_uuids: has 0 items, at least 1 allowed"),
    ({"flavor": FLAVOR, "ignore_hosts": ["h"] * 5000},
     "spec.ignore_hosts: has 5000 items, at most 1000 allowed"),
    ({"flavor": FLAVOR, "num_instances": 10 ** 9},
     "spec.num_instances: 1000000000 is greater than the maximum of 1000"),
    ({"flavor": FLAVOR, "instance_group": {"policies": ["best-effort"]}},
     "spec.instance_group.policies.0: 'best-effort' is not one of"),
    ({"flavor": FLAVOR, "surprise": True},
     "spec: Additional properties are not allowed ('surprise' was "
     "unexpected)"),
]


@pytest.fixture
def serving(make_deployment):
    deployment = make_deployment()
    deployment.fleet(10)
    deployment.start_server()
    return deployment


def test_each_malformed_spec_is_refused_by_name_and_serving_goes_on(serving):
    call = serving.api.client.prepare(version="1.0").call
    for spec, message in BAD_SPECS:
        with pytest.raises(exception.InvalidRequest) as caught:
            call({}, "select_destinations", spec=spec)
        assert caught.value.message.startswith(message), spec
        # A valid call right after each bad one is still answered.
        assert serving.api.select_destinations({}, {"flavor": FLAVOR})
    assert len(serving.allocations()) == len(BAD_SPECS)
    assert "Traceback" not in serving.server_log()


def test_unknown_method_and_bad_arguments(serving):
    call = serving.api.client.prepare(version="1.0").call
    with pytest.raises(messaging.RemoteError) as caught:
        call({}, "drop_all_tables")
    assert caught.value.exc_type == "NoSuchMethod"
    with pytest.raises(exception.InvalidRequest) as caught:
        call({}, "release", consumer_uuids="not-a-list")
    assert caught.value.message.startswith("consumer_uuids:")
    with pytest.raises(exception.InvalidRequest):
        call({}, "rank_destinations", spec={"flavor": FLAVOR}, limit=-3)
    with pytest.raises(exception.InvalidRequest) as caught:
        call({}, "select_destinations", spec={"flavor": FLAVOR},
             request_spec={"instance_type": FLAVOR})
    assert "not both" in caught.value.message
    with pytest.raises(exception.InvalidRequest) as caught:
        call({}, "select_destinations",
             request_spec={"instance_properties": {}})
    assert caught.value.message == \
        "request_spec.instance_type: the flavor is missing"
    assert serving.api.select_destinations({}, {"flavor": FLAVOR})
    assert serving.api.ping({})["version"] == rpc.API_VERSION
