"""Malformed calls get a clean error naming the problem, nothing is claimed,
and the server keeps answering valid calls."""
from __future__ import annotations

import oslo_messaging as messaging
import pytest

from scheduler import exception
from scheduler.rpc import transport as rpc
from tests.functional.conftest import every_database

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


@every_database
def test_a_nul_character_in_what_a_claim_stores_is_named(serving):
    """JSON carries "\\u0000"; PostgreSQL takes no NUL in a text column, so
    the claim failed as "database ... failed; check [database] connection"
    (an ERROR on the server, ServiceUnavailable to the caller), and SQLite
    and MariaDB stored it. It is the request's fault: refused by name, on
    every database alike."""
    call = serving.api.client.prepare(version="1.0").call
    for field in ("project_id", "user_id"):
        with pytest.raises(exception.InvalidRequest) as caught:
            call({}, "select_destinations",
                 spec={"flavor": FLAVOR, field: "p\x00"})
        assert caught.value.message == (
            f"spec.{field}: 'p\\x00' is not storable text (it holds a NUL "
            f"character)")
    stack = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000d1",
             "project_id": "p\x00",
             "resources": {"a": {"spec": {"flavor": FLAVOR}}}}
    with pytest.raises(exception.InvalidRequest) as caught:
        call({}, "select_stack", stack=stack)
    assert caught.value.message == (
        "project_id: 'p\\x00' is not storable text (it holds a NUL "
        "character)")
    assert serving.allocations() == []
    assert serving.api.select_destinations({}, {"flavor": FLAVOR})
    assert " ERROR " not in serving.server_log()


@pytest.mark.parametrize("flavor, count", [
    # one instance: root_gb + ephemeral_gb is 2**32 - 2 GB of disk
    ({"memory_mb": 1, "vcpus": 1, "root_gb": 2 ** 31 - 1,
      "ephemeral_gb": 2 ** 31 - 1}, 1),
    # each size valid, their sum on the one forced host is not
    ({"memory_mb": 2 ** 31 - 1, "vcpus": 1, "root_gb": 1}, 2),
    # one valid instance, on a host already holding one
    ({"memory_mb": 2 ** 31 - 1, "vcpus": 1, "root_gb": 1}, 0),
])
@every_database
def test_a_claim_beyond_an_integer_column_finds_no_room(serving, flavor,
                                                         count):
    """Sizes each within the schema's range can add up, on one node, to
    more than an INTEGER column holds. PostgreSQL's prepared claim refused
    the value itself: "database ... failed: integer out of range; check
    [database] connection" (ServiceUnavailable, an ERROR on the server)
    where SQLite and MariaDB say the forced host has no room."""
    host = sorted(serving.nodes())[0]
    call = serving.api.client.prepare(version="1.0").call
    held = []
    if not count:
        held = serving.api.select_destinations(
            {}, {"flavor": FLAVOR, "force_hosts": [host]})
        count = 1
    with pytest.raises(exception.NoValidHost) as caught:
        call({}, "select_destinations", spec={
            "flavor": flavor, "num_instances": count, "force_hosts": [host]})
    assert str(caught.value).startswith(
        "No valid host: the forced host has no room: compute node "), \
        str(caught.value)
    assert serving.api.release({}, [d["uuid"] for d in held]) == len(held)
    assert serving.allocations() == []
    assert serving.api.select_destinations({}, {"flavor": FLAVOR})
    assert " ERROR " not in serving.server_log()


def test_a_lone_surrogate_echoed_in_a_refusal_is_logged(serving):
    """JSON carries "\\ud800"; a host or zone name holding one is echoed
    in the server's "refused" line. The stream's strict encoding made that
    line fail ("--- Logging error --- ... UnicodeEncodeError" and a
    traceback on the server's output) instead of being written."""
    call = serving.api.client.prepare(version="1.0").call
    for extra in ({"availability_zone": "az\ud800"},
                  {"force_hosts": ["h\ud800"]},
                  {"requested_destination": {"host": "h\ud800"}}):
        with pytest.raises(exception.NoValidHost):
            call({}, "select_destinations", spec={"flavor": FLAVOR, **extra})
    assert serving.api.select_destinations({}, {"flavor": FLAVOR})
    log = serving.server_log()
    assert "Logging error" not in log
    assert "Traceback" not in log
    assert log.count("refused") >= 3
