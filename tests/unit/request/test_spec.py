"""RequestSpec: a validated ``spec`` built into the request's dataclasses."""
from __future__ import annotations

import json
import uuid

import pytest

from scheduler import exception
from scheduler.request.spec import disk_gb_of
from scheduler.request.spec import Flavor
from scheduler.request.spec import InstanceGroup
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import spec_dict

U1 = "11111111-1111-4111-8111-111111111111"
U2 = "22222222-2222-4222-8222-222222222222"
GROUP = "33333333-3333-4333-8333-333333333333"


def _full_spec() -> dict:
    return spec_dict(
        instance_uuids=[U1, U2],
        flavor={"extra_specs": {"hw:cpu_policy": "shared", "quota": 2}},
        image={"id": "img-1", "properties": {"architecture": "x86_64"}},
        availability_zone="az1",
        ignore_hosts=["h9"], force_hosts=["h1"], force_nodes=["n1"],
        requested_destination={"host": "h1", "node": "n1",
                               "aggregates": ["a1"]},
        scheduler_hints={"group": GROUP, "different_host": [U1]},
        instance_group={"uuid": GROUP, "policies": ["anti-affinity"],
                        "hosts": ["h2"], "members": [U1]},
        retry={"num_attempts": 2, "hosts": [["h3", "n3"]]},
        return_alternates=True)


def _invalid(spec, **kw) -> str:
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_primitives(spec, **kw)
    return info.value.message


# --- a valid spec ---------------------------------------------------------

def test_valid_spec_builds_every_field():
    spec = RequestSpec.from_primitives(_full_spec())
    assert spec.instance_uuids == (U1, U2)
    assert spec.num_instances == 2
    assert spec.flavor == Flavor(
        memory_mb=2048, vcpus=1, root_gb=20, ephemeral_gb=0, swap=0,
        name="m1.small", flavorid="2",
        extra_specs={"hw:cpu_policy": "shared", "quota": 2})
    assert spec.project_id == "p1" and spec.user_id == "u1"
    assert spec.image == {"id": "img-1",
                          "properties": {"architecture": "x86_64"}}
    assert spec.availability_zone == "az1"
    assert spec.ignore_hosts == ("h9",)
    assert spec.force_hosts == ("h1",)
    assert spec.force_nodes == ("n1",)
    assert spec.requested_destination == {"host": "h1", "node": "n1",
                                          "aggregates": ["a1"]}
    assert spec.scheduler_hints["group"] == GROUP
    assert spec.instance_group == InstanceGroup(
        policy="anti-affinity", uuid=GROUP, hosts=("h2",), members=(U1,))
    assert spec.retry == {"num_attempts": 2, "hosts": [["h3", "n3"]]}
    assert spec.return_alternates is True


def test_minimal_spec_defaults():
    spec = RequestSpec.from_primitives(
        {"flavor": {"memory_mb": 512, "vcpus": 1, "root_gb": 1}})
    assert spec.num_instances == 1
    assert spec.flavor.ephemeral_gb == 0 and spec.flavor.swap == 0
    assert spec.flavor.extra_specs == {}
    assert spec.image == {} and spec.scheduler_hints == {}
    assert spec.ignore_hosts == spec.force_hosts == spec.force_nodes == ()
    assert spec.availability_zone is None
    assert spec.instance_group is None and spec.retry is None
    assert spec.requested_destination is None
    assert spec.return_alternates is False


def test_null_optional_objects_are_accepted():
    spec = RequestSpec.from_primitives(spec_dict(
        image=None, requested_destination=None, scheduler_hints=None,
        instance_group=None, retry=None, availability_zone=None))
    assert spec.image == {} and spec.scheduler_hints == {}
    assert spec.instance_group is None


def test_instance_uuids_are_normalized():
    lower = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    spec = RequestSpec.from_primitives(spec_dict(
        instance_uuids=[lower.upper(), U2.replace("-", "")]))
    assert spec.instance_uuids == (lower, U2)


# --- num_instances vs instance_uuids -------------------------------------

def test_num_instances_gets_distinct_fresh_uuids():
    spec = RequestSpec.from_primitives(spec_dict(num_instances=3))
    assert spec.num_instances == 3
    assert len(set(spec.instance_uuids)) == 3
    for u in spec.instance_uuids:
        assert str(uuid.UUID(u)) == u


def test_num_instances_equal_to_uuids_is_accepted():
    spec = RequestSpec.from_primitives(spec_dict(instance_uuids=[U1, U2],
                                                 num_instances=2))
    assert spec.instance_uuids == (U1, U2)


def test_num_instances_disagreeing_with_uuids_is_rejected():
    message = _invalid(spec_dict(instance_uuids=[U1, U2], num_instances=3))
    assert message.startswith("spec.num_instances:")


def test_fresh_uuids_differ_between_parses():
    a = RequestSpec.from_primitives(spec_dict())
    b = RequestSpec.from_primitives(spec_dict())
    assert a.instance_uuids != b.instance_uuids


def test_more_uuids_than_max_instances_is_rejected():
    message = _invalid(spec_dict(instance_uuids=[U1, U2]), max_instances=1)
    assert message.startswith("spec.instance_uuids:")
    assert "at most 1" in message


def test_more_num_instances_than_max_instances_names_num_instances():
    message = _invalid(spec_dict(num_instances=3), max_instances=2)
    assert message.startswith("spec.num_instances:")
    assert "3" in message and "at most 2" in message


def test_max_instances_boundary_is_inclusive():
    spec = RequestSpec.from_primitives(spec_dict(num_instances=2),
                                       max_instances=2)
    assert spec.num_instances == 2


def test_uuids_equal_after_normalization_are_rejected():
    # Distinct strings for the schema, one consumer for the claims.
    lower = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    for twin in (lower.upper(), lower.replace("-", "")):
        message = _invalid(spec_dict(instance_uuids=[lower, twin]))
        assert message.startswith("spec.instance_uuids:"), message


# --- to_primitive ------------------------------------------------------------

def test_to_primitive_round_trip():
    spec = RequestSpec.from_primitives(_full_spec())
    primitive = spec.to_primitive()
    json.dumps(primitive)      # JSON-serializable, as the wire needs
    assert RequestSpec.from_primitives(primitive) == spec
    assert primitive["instance_uuids"] == [U1, U2]
    assert primitive["instance_group"] == {
        "uuid": GROUP, "policies": ["anti-affinity"], "hosts": ["h2"],
        "members": [U1], "rules": {"max_server_per_host": 1}}


def test_to_primitive_round_trip_minimal():
    spec = RequestSpec.from_primitives(spec_dict(num_instances=2))
    again = RequestSpec.from_primitives(spec.to_primitive())
    assert again == spec


def test_to_primitive_group_without_uuid():
    spec = RequestSpec.from_primitives(
        spec_dict(instance_group={"policies": ["affinity"]}))
    primitive = spec.to_primitive()
    assert "uuid" not in primitive["instance_group"]
    assert RequestSpec.from_primitives(primitive) == spec


# --- Flavor.disk_gb ----------------------------------------------------------

@pytest.mark.parametrize("root,ephemeral,swap,expected", [
    (10, 0, 0, 10),
    (10, 5, 0, 15),
    (10, 5, 1024, 16),
    (10, 5, 512, 16),     # swap is in MB, rounded up to a whole GB
    (10, 5, 1025, 17),
    (0, 0, 1, 1),
])
def test_flavor_disk_gb_counts_swap(root, ephemeral, swap, expected):
    flavor = Flavor(memory_mb=1, vcpus=1, root_gb=root,
                    ephemeral_gb=ephemeral, swap=swap)
    assert flavor.disk_gb == expected


@pytest.mark.parametrize("root,eph,swap,expected", [
    (0, 0, 0, 0), (1, 2, 0, 3), (1, 0, 1, 2), (1, 0, 2048, 3),
    (1, 0, 2049, 4)])
def test_disk_gb_of(root, eph, swap, expected):
    assert disk_gb_of(root, eph, swap) == expected


# --- requested_destination.aggregates -------------------------------------------

def test_required_aggregates_are_ored_within_an_entry_anded_across():
    spec = RequestSpec.from_primitives(spec_dict(requested_destination={
        "aggregates": ["agg-a, agg-b", "agg-c"]}))
    assert spec.required_aggregates() == (frozenset({"agg-a", "agg-b"}),
                                          frozenset({"agg-c"}))
    assert RequestSpec.from_primitives(spec_dict()).required_aggregates() \
        == ()


@pytest.mark.parametrize("entry", ["", " ", "a,,b", "a,", ",a"])
def test_empty_aggregate_in_an_entry_is_rejected_naming_it(entry):
    with pytest.raises(exception.InvalidRequest,
                       match=r"^spec\.requested_destination\.aggregates\.1: "):
        RequestSpec.from_primitives(spec_dict(requested_destination={
            "aggregates": ["ok", entry]}))


# --- instance_group.members ---------------------------------------------------

def test_group_members_are_canonical_uuids_once_each():
    u = "AAAAAAAA-0000-4000-8000-000000000001"
    spec = RequestSpec.from_primitives(spec_dict(instance_group={
        "policies": ["anti-affinity"], "members": [u, u.lower(),
                                                   u.replace("-", "")]}))
    assert spec.instance_group.members == (u.lower(),)


@pytest.mark.parametrize("member", ["h1", "aaaaaaaa-0000-4000-8000-000000000001\n"])
def test_group_member_that_is_not_a_uuid_is_rejected_naming_it(member):
    with pytest.raises(exception.InvalidRequest,
                       match=r"^spec\.instance_group\.members\.0"):
        RequestSpec.from_primitives(spec_dict(instance_group={
            "policies": ["anti-affinity"], "members": [member]}))
