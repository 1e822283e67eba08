"""scheduler.decide.rebuild: a rebuild check as the request it plans."""
from __future__ import annotations

import types

import pytest

from scheduler import exception
from scheduler.decide import rebuild
from tests.unit.fakes import make_spec

U = "1a2b3c4d-0000-4000-8000-000000000001"
REBUILD = {"_nova_check_type": ["rebuild"]}


def _held(host: str = "h3", node: str = "n3") -> dict:
    return {U: types.SimpleNamespace(host=host, hypervisor_hostname=node)}


def test_the_requested_destination_is_the_current_host():
    spec = make_spec(instance_uuids=[U], scheduler_hints=REBUILD,
                     requested_destination={"host": "h1"},
                     force_hosts=["h2"])
    check = rebuild.check_spec(spec, _held())
    assert check.requested_destination == {"host": "h1"}


def test_else_the_one_forced_host_and_node_and_nothing_is_forced():
    spec = make_spec(instance_uuids=[U], scheduler_hints=REBUILD,
                     force_hosts=["h2"], force_nodes=["n2"],
                     ignore_hosts=["h2"], return_alternates=True)
    check = rebuild.check_spec(spec, _held())
    assert check.requested_destination == {"host": "h2", "node": "n2"}
    assert (check.force_hosts, check.force_nodes, check.ignore_hosts) == (
        (), (), ())
    assert check.return_alternates is False


def test_else_the_host_of_the_instances_claim():
    spec = make_spec(instance_uuids=[U], scheduler_hints=REBUILD)
    check = rebuild.check_spec(spec, _held("h3", "n3"))
    assert check.requested_destination == {"host": "h3", "node": "n3"}


def test_no_current_host_anywhere_is_an_invalid_request():
    spec = make_spec(instance_uuids=[U], scheduler_hints=REBUILD)
    with pytest.raises(exception.InvalidRequest,
                       match="^spec.requested_destination: a rebuild check "
                             "needs the instance's current host"):
        rebuild.check_spec(spec, {})


def test_the_host_is_asked_for_no_more_room_than_it_gave():
    spec = make_spec(instance_uuids=[U], scheduler_hints=REBUILD)
    flavor = rebuild.check_spec(spec, _held()).flavor
    assert (flavor.vcpus, flavor.memory_mb, flavor.root_gb,
            flavor.ephemeral_gb, flavor.swap) == (0, 0, 0, 0, 0)
    assert flavor.name == spec.flavor.name
