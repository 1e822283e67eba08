"""Nova 4.0's legacy ``request_spec`` + ``filter_properties`` pair,
translated to the current ``spec`` shape."""
from __future__ import annotations

import copy

import pytest

from scheduler import exception
from scheduler.request.legacy import legacy_to_spec
from scheduler.request.spec import Flavor
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import FLAVOR

U1 = "11111111-1111-4111-8111-111111111111"
U2 = "22222222-2222-4222-8222-222222222222"


# --- legacy request_spec + filter_properties ---------------------------------

def _legacy_request_spec(**overrides) -> dict:
    """The shape nova's conductor sent with RPC 4.0 (extra keys included)."""
    request_spec = {
        "image": {"id": "img-1", "name": "cirros", "status": "active",
                  "properties": {"hypervisor_type": "qemu"}},
        "instance_properties": {"uuid": U1, "project_id": "p1",
                                "user_id": "u1", "availability_zone": "az2",
                                "memory_mb": 2048, "vcpus": 1},
        "instance_type": dict(FLAVOR, id=5, rxtx_factor=1.0, is_public=True,
                              vcpu_weight=None, disabled=False, deleted=0),
        "instance_uuids": [U1],
        "num_instances": 1,
    }
    request_spec.update(overrides)
    return request_spec


def test_legacy_translation():
    spec = RequestSpec.from_legacy(_legacy_request_spec(), {
        "ignore_hosts": ["h9"], "force_hosts": ["h1"], "force_nodes": ["n1"],
        "retry": {"num_attempts": 1, "hosts": [["h3", "n3"]]},
        "scheduler_hints": {"build_near_host_ip": "192.0.2.1"},
        "limits": {}, "pci_requests": None, "config_options": {},
    })
    assert spec.instance_uuids == (U1,)
    assert spec.flavor == Flavor(**FLAVOR)
    assert spec.project_id == "p1" and spec.user_id == "u1"
    assert spec.availability_zone == "az2"
    assert spec.image == {"id": "img-1",
                          "properties": {"hypervisor_type": "qemu"}}
    assert spec.ignore_hosts == ("h9",)
    assert spec.force_hosts == ("h1",)
    assert spec.force_nodes == ("n1",)
    assert spec.retry == {"num_attempts": 1, "hosts": [["h3", "n3"]]}
    assert spec.scheduler_hints == {"build_near_host_ip": "192.0.2.1"}
    assert spec.instance_group is None


def test_legacy_group_policies_and_hosts():
    spec = RequestSpec.from_legacy(_legacy_request_spec(), {
        "group_updated": True, "group_policies": {"anti-affinity"},
        "group_hosts": {"h1", "h2"}, "group_members": [U2]})
    group = spec.instance_group
    assert group.policy == "anti-affinity"
    assert sorted(group.hosts) == ["h1", "h2"]
    assert group.members == (U2,)
    assert group.uuid is None


def test_legacy_unknown_group_policy_is_rejected():
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_legacy(_legacy_request_spec(),
                                {"group_policies": ["legacy"]})
    assert info.value.message.startswith("spec.instance_group.policies.0:")


def test_legacy_flavor_in_filter_properties():
    request_spec = _legacy_request_spec()
    flavor = request_spec.pop("instance_type")
    spec = RequestSpec.from_legacy(request_spec, {"instance_type": flavor})
    assert spec.flavor.memory_mb == FLAVOR["memory_mb"]


def test_legacy_instance_uuid_from_properties():
    spec = RequestSpec.from_legacy(
        _legacy_request_spec(instance_uuids=None), None)
    assert spec.instance_uuids == (U1,)


def test_legacy_num_instances_without_uuids():
    spec = RequestSpec.from_legacy(
        _legacy_request_spec(instance_uuids=None, num_instances=3), {})
    assert spec.num_instances == 3
    assert U1 not in spec.instance_uuids


def test_legacy_several_uuids():
    spec = RequestSpec.from_legacy(
        _legacy_request_spec(instance_uuids=[U1, U2], num_instances=2), {})
    assert spec.instance_uuids == (U1, U2)


def test_legacy_bad_value_names_the_translated_field():
    request_spec = _legacy_request_spec()
    request_spec["instance_type"]["memory_mb"] = -5
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_legacy(request_spec, {})
    assert info.value.message.startswith("spec.flavor.memory_mb:")


def test_legacy_bad_filter_property_is_rejected():
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_legacy(_legacy_request_spec(),
                                {"ignore_hosts": "h1"})
    assert info.value.message.startswith("spec.ignore_hosts:")


@pytest.mark.parametrize("request_spec,filter_properties,field", [
    (None, {}, "request_spec:"),
    ([], {}, "request_spec:"),
    (_legacy_request_spec(), [], "filter_properties:"),
    (_legacy_request_spec(instance_type=None), {}, "request_spec.instance_type:"),
    (_legacy_request_spec(instance_type="m1.small"), {},
     "request_spec.instance_type:"),
    (_legacy_request_spec(instance_properties=["x"]), {},
     "request_spec.instance_properties:"),
])
def test_legacy_bad_shapes(request_spec, filter_properties, field):
    with pytest.raises(exception.InvalidRequest) as info:
        legacy_to_spec(request_spec, filter_properties)
    assert info.value.message.startswith(field)


@pytest.mark.parametrize("name", ["group_policies", "group_hosts",
                                  "group_members"])
def test_legacy_group_values_that_are_not_lists_are_named(name):
    properties = {"group_policies": ["affinity"], name: 5}
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_legacy(_legacy_request_spec(), properties)
    field = "spec.instance_group." + name.split("_")[1]
    assert info.value.message.startswith(field + ":"), info.value.message


def test_legacy_translation_does_not_mutate_inputs():
    request_spec = _legacy_request_spec()
    filter_properties = {"group_policies": ["affinity"], "group_hosts": ["h"]}
    before = (copy.deepcopy(request_spec), copy.deepcopy(filter_properties))
    RequestSpec.from_legacy(request_spec, filter_properties)
    assert (request_spec, filter_properties) == before


def test_legacy_to_primitive_is_the_current_shape():
    spec = RequestSpec.from_legacy(_legacy_request_spec(),
                                   {"group_policies": ["affinity"]})
    assert RequestSpec.from_primitives(spec.to_primitive()) == spec


def test_legacy_num_instances_disagreeing_with_uuids_is_refused():
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_legacy(_legacy_request_spec(num_instances=3), {})
    assert info.value.message.startswith("spec.num_instances: 3 does not "
                                         "match the 1 instance_uuids")
