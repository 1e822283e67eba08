"""What this scheduler does not model, refused instead of ignored.

The one list of flavor extra specs and image properties that ask nova for
placement resources or traits, a NUMA layout, CPU pinning, huge pages,
persistent memory or PCI devices. The request's own check
(:func:`check_supported`) and the nova shapes (``nova/primitives``) both
ask :func:`unsupported_extra_spec` and :func:`unsupported_image_property`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oslo_utils import strutils

from scheduler import exception

#: Flavor extra-spec prefixes that ask nova's placement for resources or
#: traits (``resources:VGPU``, ``resources1:...``, ``trait:HW_CPU_X86_AVX2``)
#: or nova's NUMA / PCI filters for a layout (an explicit NUMA topology, a
#: CPU thread policy, huge pages, persistent memory: nova 34 gives each
#: instance a NUMA topology); none of it is modelled here, so such a request
#: is refused rather than placed as if it were not there.
UNSUPPORTED_EXTRA_SPECS = ("resources", "trait", "hw:numa_",
                           "pci_passthrough:", "hw:cpu_thread_policy",
                           "hw:mem_page_size", "hw:pmem")
#: Image properties asking for the same things.
UNSUPPORTED_IMAGE_PROPS = ("traits_required", "trait:", "hw_numa_nodes",
                           "hw_numa_cpus", "hw_numa_mem",
                           "hw_cpu_thread_policy", "hw_mem_page_size")
#: The CPU policy extra spec and image property: any policy but ``shared``
#: (``dedicated``, ``mixed``) pins CPUs, which nova 34 places as PCPU
#: inventory on a host NUMA topology.
CPU_POLICY_EXTRA_SPEC = "hw:cpu_policy"
CPU_POLICY_IMAGE_PROP = "hw_cpu_policy"
_UNPINNED = (None, "", "shared")


def _given(value: Any) -> bool:
    return value not in (None, "")


def _true(value: Any) -> bool:
    return strutils.bool_from_string(value)


#: Extra specs that nova 34's scheduler turns into placement traits or
#: resources by itself (``ResourceRequest._translate_*`` in
#: nova/scheduler/utils.py, and its always-on request filters in
#: nova/scheduler/request_filter.py), with the values that do: a vTPM,
#: required secure boot, a maxphysaddr mode, memory encryption, a packed
#: virtqueue, ephemeral encryption, a virtio sound card. No host here
#: reports traits, so such a request is refused like ``trait:*``.
TRAIT_EXTRA_SPECS: Mapping[str, Any] = {
    "hw:tpm_version": _given,
    "os:secure_boot": lambda value: value == "required",
    "hw:maxphysaddr_mode": _given,
    "hw:mem_encryption": _true,
    "hw:virtio_packed_ring": _true,
    "hw:ephemeral_encryption": _true,
    "hw:sound_model": lambda value: value == "virtio",
}
#: The image properties nova 34 turns into traits the same way: each extra
#: spec's twin (``hw:tpm_version`` -> ``hw_tpm_version``), asking when the
#: extra spec would.
TRAIT_IMAGE_PROPS: Mapping[str, Any] = {
    key.replace(":", "_", 1): asks for key, asks in TRAIT_EXTRA_SPECS.items()}
#: Stateless firmware, an image property only, which nova reads only for a
#: UEFI image.
FIRMWARE_STATELESS_PROP = "hw_firmware_stateless"


def unsupported_extra_spec(key: str, value: Any) -> bool:
    """Whether flavor extra spec ``key`` = ``value`` asks for something
    this scheduler does not model (see ``UNSUPPORTED_EXTRA_SPECS``)."""
    if key == CPU_POLICY_EXTRA_SPEC:
        return value not in _UNPINNED
    if key in TRAIT_EXTRA_SPECS:
        return TRAIT_EXTRA_SPECS[key](value)
    return key.startswith(UNSUPPORTED_EXTRA_SPECS)


def unsupported_image_property(key: str, value: Any,
                               props: Mapping[str, Any] | None = None
                               ) -> bool:
    """Whether image property ``key`` = ``value`` (of the image's
    ``props``) asks for something this scheduler does not model; an unset
    (None, empty, false) one asks for nothing."""
    if value in (None, "", False):
        return False
    if key == CPU_POLICY_IMAGE_PROP:
        return value not in _UNPINNED
    if key == FIRMWARE_STATELESS_PROP:
        return _true(value) and (props or {}).get("hw_firmware_type") == "uefi"
    if key in TRAIT_IMAGE_PROPS:
        return TRAIT_IMAGE_PROPS[key](value)
    return key.startswith(UNSUPPORTED_IMAGE_PROPS)


def check_supported(spec: dict[str, Any]) -> None:
    """Refuse what would otherwise pass validation and be ignored: extra
    specs and image properties for placement resources and traits, NUMA
    layouts and PCI devices.

    :raises InvalidRequest: naming the first such key.
    """
    for key, value in (spec["flavor"].get("extra_specs") or {}).items():
        if unsupported_extra_spec(key, value):
            raise exception.InvalidRequest(
                f"spec.flavor.extra_specs.{key[:60]}: not supported by this "
                f"scheduler (no placement resources or traits, NUMA, CPU "
                f"pinning, huge pages or PCI)")
    props = (spec.get("image") or {}).get("properties") or {}
    for key, value in props.items():
        if unsupported_image_property(key, value, props):
            raise exception.InvalidRequest(
                f"spec.image.properties.{key[:60]}: not supported by this "
                f"scheduler (no placement traits, NUMA, CPU pinning or huge "
                f"pages)")
