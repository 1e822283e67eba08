"""What this scheduler does not model is refused, not ignored."""
from __future__ import annotations

import pytest

from scheduler import exception
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import spec_dict


# --- what cannot be honoured is refused, not ignored ---------------------------

@pytest.mark.parametrize("key", ["resources:VGPU", "resources1:PCPU",
                                 "trait:HW_CPU_X86_AVX2", "trait2:CUSTOM_X",
                                 "hw:numa_nodes", "hw:numa_cpus.0",
                                 "pci_passthrough:alias"])
def test_extra_specs_for_placement_numa_or_pci_are_refused(key):
    with pytest.raises(exception.InvalidRequest) as caught:
        RequestSpec.from_primitives(spec_dict(flavor={"extra_specs": {
            "hw:cpu_policy": "shared", key: "1"}}))
    assert caught.value.message.startswith(
        f"spec.flavor.extra_specs.{key}: not supported by this scheduler")


@pytest.mark.parametrize("key", ["traits_required", "trait:HW_CPU_X86_AVX2",
                                 "hw_numa_nodes", "hw_numa_cpus.0"])
def test_image_properties_for_traits_or_numa_are_refused(key):
    with pytest.raises(exception.InvalidRequest) as caught:
        RequestSpec.from_primitives(spec_dict(image={
            "id": "i", "properties": {key: "2"}}))
    assert caught.value.message.startswith(
        f"spec.image.properties.{key}: not supported by this scheduler")


def _refused_extra_spec(key: str, value) -> None:
    with pytest.raises(exception.InvalidRequest) as caught:
        RequestSpec.from_primitives(spec_dict(flavor={"extra_specs": {
            key: value}}))
    assert caught.value.message.startswith(
        f"spec.flavor.extra_specs.{key}: not supported by this scheduler")


def _refused_image_property(key: str, properties: dict) -> None:
    with pytest.raises(exception.InvalidRequest) as caught:
        RequestSpec.from_primitives(spec_dict(image={
            "id": "i", "properties": properties}))
    assert caught.value.message.startswith(
        f"spec.image.properties.{key}: not supported by this scheduler")


# nova 34 gives such an instance a NUMA topology (hardware.
# numa_get_constraints: pinned CPUs, huge pages, persistent memory) and asks
# placement for PCPU: NUMATopologyFilter then needs a host NUMA topology,
# which no host here reports. Placing it as a shared-CPU instance is wrong.
@pytest.mark.parametrize("key,value", [
    ("hw:cpu_policy", "dedicated"), ("hw:cpu_policy", "mixed"),
    ("hw:cpu_thread_policy", "require"), ("hw:mem_page_size", "large"),
    ("hw:pmem", "SMALL")])
def test_extra_specs_for_pinning_huge_pages_or_pmem_are_refused(key, value):
    _refused_extra_spec(key, value)


@pytest.mark.parametrize("key,value", [
    ("hw_cpu_policy", "dedicated"), ("hw_cpu_policy", "mixed"),
    ("hw_cpu_thread_policy", "isolate"), ("hw_mem_page_size", "2MB")])
def test_image_properties_for_pinning_or_huge_pages_are_refused(key, value):
    _refused_image_property(key, {key: value})


# nova 34 turns these into placement traits or resources itself
# (nova/scheduler/utils.py ResourceRequest._translate_*, and the always-on
# request filters in nova/scheduler/request_filter.py): a vTPM, required
# secure boot, a maxphysaddr mode, memory encryption, stateless firmware,
# a packed virtqueue, ephemeral encryption, a virtio sound card. No host
# here reports traits, so placing such an instance anywhere is wrong.
@pytest.mark.parametrize("key,value", [
    ("hw:tpm_version", "2.0"), ("os:secure_boot", "required"),
    ("hw:maxphysaddr_mode", "passthrough"), ("hw:mem_encryption", "true"),
    ("hw:virtio_packed_ring", "yes"), ("hw:ephemeral_encryption", "True"),
    ("hw:sound_model", "virtio")])
def test_extra_specs_nova_turns_into_traits_are_refused(key, value):
    _refused_extra_spec(key, value)


@pytest.mark.parametrize("key,value", [
    ("hw_tpm_version", "1.2"), ("os_secure_boot", "required"),
    ("hw_maxphysaddr_mode", "emulate"), ("hw_mem_encryption", True),
    ("hw_firmware_stateless", "true"), ("hw_virtio_packed_ring", "1"),
    ("hw_ephemeral_encryption", "yes"), ("hw_sound_model", "virtio")])
def test_image_properties_nova_turns_into_traits_are_refused(key, value):
    _refused_image_property(key, {key: value, "hw_firmware_type": "uefi"})


def test_values_that_ask_nova_for_no_trait_are_accepted():
    spec = RequestSpec.from_primitives(spec_dict(
        flavor={"extra_specs": {
            "os:secure_boot": "optional", "hw:mem_encryption": "false",
            "hw:virtio_packed_ring": "no", "hw:sound_model": "ich9",
            "hw:tpm_model": "tpm-crb"}},
        image={"id": "i", "properties": {
            "os_secure_boot": "disabled", "hw_mem_encryption": False,
            "hw_firmware_stateless": False, "hw_sound_model": "sb16",
            "hw_virtio_packed_ring": "false"}}))
    assert len(spec.flavor.extra_specs) == 5
    # nova reads stateless firmware only for a UEFI image
    RequestSpec.from_primitives(spec_dict(image={"id": "i", "properties": {
        "hw_firmware_stateless": True, "hw_firmware_type": "bios"}}))


def test_a_shared_cpu_policy_is_accepted():
    spec = RequestSpec.from_primitives(spec_dict(
        flavor={"extra_specs": {"hw:cpu_policy": "shared"}},
        image={"id": "i", "properties": {"hw_cpu_policy": "shared"}}))
    assert spec.flavor.extra_specs == {"hw:cpu_policy": "shared"}


def test_extra_specs_the_filters_read_are_accepted():
    spec = RequestSpec.from_primitives(spec_dict(flavor={"extra_specs": {
        "capabilities:hypervisor_type": "QEMU", "hw:cpu_policy": "shared",
        "aggregate_instance_extra_specs:ssd": "true", "quota:cpu": "1",
        "hw:maxphysaddr_bits": "42"}}))
    assert len(spec.flavor.extra_specs) == 5
