"""Nova's object primitives read into our request spec, using primitives
nova 34 itself made (nova34_request_spec.json: a RequestSpec built with
``RequestSpec.from_components`` and serialized by NovaObjectSerializer, and
the 4.0 pair ``to_legacy_*_dict`` makes of it)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from scheduler import exception
from scheduler.nova import primitives
from scheduler.request.spec import RequestSpec

SAMPLES = json.loads(
    Path(__file__).with_name("nova34_request_spec.json").read_text())
INSTANCE = "11111111-2222-4333-8444-555555555555"
GROUP = "7b8a3c2e-1f4d-4e5a-9b6c-0d1e2f3a4b5c"


def spec_obj(**data):
    primitive = copy.deepcopy(SAMPLES["spec_obj"])
    primitive["nova_object.data"].update(data)
    return primitive


def test_a_boot_request_spec_reads_into_a_valid_spec():
    spec = primitives.spec_from_request_spec(spec_obj(), [INSTANCE], True)
    parsed = RequestSpec.from_primitives(spec)

    assert parsed.instance_uuids == (INSTANCE,)
    assert (parsed.flavor.memory_mb, parsed.flavor.vcpus,
            parsed.flavor.root_gb, parsed.flavor.swap) == (2048, 1, 20, 512)
    assert parsed.flavor.extra_specs == {"hw:cpu_policy": "shared"}
    assert parsed.image["properties"]["hw_architecture"] == "x86_64"
    assert parsed.availability_zone == "az1"
    assert parsed.ignore_hosts == ("c9",)
    assert parsed.retry == {"num_attempts": 2, "hosts": [["c8", "c8"]]}
    assert parsed.requested_destination["host"] == "c2"
    group = parsed.instance_group
    assert (group.uuid, group.policy, group.max_server_per_host) == (
        GROUP, "anti-affinity", 2)
    assert parsed.scheduler_hints["group"] == GROUP
    assert parsed.return_alternates


def test_without_instance_uuids_the_specs_own_instance_is_the_consumer():
    spec = primitives.spec_from_request_spec(spec_obj())
    assert spec["instance_uuids"] == [INSTANCE]


def test_boot_from_volume_asks_for_no_root_disk():
    spec = primitives.spec_from_request_spec(spec_obj(is_bfv=True))
    assert spec["flavor"]["root_gb"] == 0


@pytest.mark.parametrize("data, field", [
    ({"numa_topology": {"nova_object.name": "InstanceNUMATopology",
                        "nova_object.data": {"cells": []}}},
     "spec_obj.numa_topology"),
    ({"pci_requests": {"nova_object.name": "InstancePCIRequests",
                       "nova_object.data": {"requests": [{}]}}},
     "spec_obj.pci_requests"),
    ({"requested_resources": [{"nova_object.name": "RequestGroup"}]},
     "spec_obj.requested_resources"),
    ({"request_level_params": {
        "nova_object.name": "RequestLevelParams",
        "nova_object.data": {"root_required": ["HW_CPU_X86_AVX2"]}}},
     "spec_obj.request_level_params.root_required"),
    ({"request_level_params": {
        "nova_object.name": "RequestLevelParams",
        "nova_object.data": {"root_forbidden": ["COMPUTE_STATUS_DISABLED"]}}},
     "spec_obj.request_level_params.root_forbidden"),
])
def test_fields_we_cannot_honour_are_refused_by_name(data, field):
    with pytest.raises(primitives.Unsupported, match=field):
        primitives.spec_from_request_spec(spec_obj(**data))


@pytest.mark.parametrize("key", ["resources:VGPU", "resources1:CUSTOM_X",
                                 "trait:HW_CPU_X86_AVX2", "hw:numa_nodes"])
def test_extra_specs_asking_placement_for_more_are_refused(key):
    primitive = spec_obj()
    flavor = primitive["nova_object.data"]["flavor"]["nova_object.data"]
    flavor["extra_specs"] = {key: "1"}
    with pytest.raises(primitives.Unsupported,
                       match=f"spec_obj.flavor.extra_specs.{key}"):
        primitives.spec_from_request_spec(primitive)


# Pinning and huge pages need a host NUMA topology; the others nova 34
# turns into placement traits itself: no host here reports either.
@pytest.mark.parametrize("key,value", [("hw:cpu_policy", "dedicated"),
                                       ("hw:mem_page_size", "large"),
                                       ("hw:tpm_version", "2.0"),
                                       ("os:secure_boot", "required")])
def test_extra_specs_asking_for_what_no_host_reports_are_refused(key, value):
    primitive = spec_obj()
    flavor = primitive["nova_object.data"]["flavor"]["nova_object.data"]
    flavor["extra_specs"] = {key: value}
    with pytest.raises(primitives.Unsupported,
                       match=f"spec_obj.flavor.extra_specs.{key}"):
        primitives.spec_from_request_spec(primitive)


def test_empty_numa_pci_and_trait_fields_are_no_request():
    # What nova sends on every plain boot (see the sample): accepted.
    data = SAMPLES["spec_obj"]["nova_object.data"]
    assert data["numa_topology"] is None
    assert data["requested_resources"] == []
    primitives.spec_from_request_spec(spec_obj())


def test_a_primitive_of_the_wrong_class_is_an_invalid_request():
    with pytest.raises(exception.InvalidRequest, match="spec_obj.flavor"):
        primitives.spec_from_request_spec(spec_obj(flavor={
            "nova_object.name": "ImageMeta", "nova_object.data": {}}))
    with pytest.raises(exception.InvalidRequest, match="spec_obj"):
        primitives.spec_from_request_spec({"memory_mb": 1})


def test_the_legacy_pair_reads_into_the_same_request():
    legacy = SAMPLES["legacy"]
    spec = primitives.spec_from_legacy(legacy["request_spec"],
                                       legacy["filter_properties"])
    parsed = RequestSpec.from_primitives(spec)
    current = RequestSpec.from_primitives(
        primitives.spec_from_request_spec(spec_obj()))

    for field in ("instance_uuids", "flavor", "ignore_hosts", "retry",
                  "requested_destination", "availability_zone"):
        assert getattr(parsed, field) == getattr(current, field), field
    assert parsed.instance_group.uuid == GROUP
    assert parsed.instance_group.policy == "anti-affinity"


def test_legacy_numa_is_refused_by_name():
    request_spec = copy.deepcopy(SAMPLES["legacy"]["request_spec"])
    request_spec["instance_properties"]["numa_topology"] = {
        "nova_object.name": "InstanceNUMATopology",
        "nova_object.data": {"cells": []}}
    with pytest.raises(primitives.Unsupported,
                       match="instance_properties.numa_topology"):
        primitives.spec_from_legacy(request_spec, {})


def test_moving_one_instance_of_a_multi_create_boot_is_one_instance():
    # nova keeps the boot's num_instances in the stored RequestSpec and
    # sends it unchanged when one of those instances moves; its own
    # scheduler counts instance_uuids instead.
    spec = primitives.spec_from_request_spec(spec_obj(num_instances=3),
                                             [INSTANCE])
    assert RequestSpec.from_primitives(spec).instance_uuids == (INSTANCE,)


def _group(**data):
    return {"nova_object.name": "InstanceGroup", "nova_object.data": data}


@pytest.mark.parametrize("data, field", [
    ({"instance_group": _group(policies=5)},
     "spec.instance_group.policies.0"),
    ({"instance_group": _group(policy="affinity", hosts=5)},
     "spec.instance_group.hosts"),
    ({"instance_group": _group(policy="affinity", members="abc")},
     "spec.instance_group.members"),
    ({"instance_group": _group(policy="anti-affinity",
                               rules={"max_server_per_host": float("inf")})},
     "spec_obj.instance_group.rules.max_server_per_host"),
    ({"retry": {"nova_object.name": "SchedulerRetries", "nova_object.data": {
        "hosts": {"nova_object.name": "ComputeNodeList",
                  "nova_object.data": {"objects": 5}}}}},
     "spec_obj.retry.hosts.objects"),
])
def test_malformed_nested_objects_are_refused_naming_the_field(data, field):
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_primitives(primitives.spec_from_request_spec(
            spec_obj(**data), [INSTANCE]))
    assert str(info.value).startswith(field + ":"), str(info.value)


def test_pci_requests_that_are_not_an_object_are_refused_by_name():
    malformed = {"nova_object.name": "InstancePCIRequests",
                 "nova_object.data": [1]}
    with pytest.raises(primitives.Unsupported, match="spec_obj.pci_requests"):
        primitives.spec_from_request_spec(spec_obj(pci_requests=malformed))
