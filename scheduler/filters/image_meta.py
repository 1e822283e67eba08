"""nova 34's image properties (``ImageMetaProps``): the names its filters
can read, and the legacy names it still reads as today's.

AggregateImagePropertiesIsolation reads an image's properties through
:func:`nova_image_properties`; the ImagePropertiesFilter looks each of its
properties up under :func:`with_legacy_names` (so its refusals name the
property the image set). Both take the legacy names from this one map.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: nova 34's ImageMetaProps fields: the only image properties its filter
#: can read; an aggregate key naming anything else is skipped there (its
#: "no longer possible to filter on arbitrary image metadata").
NOVA_IMAGE_PROPERTIES = frozenset("""
    hw_architecture hw_auto_disk_config hw_boot_menu hw_cdrom_bus
    hw_cpu_cores hw_cpu_max_cores hw_cpu_max_sockets hw_cpu_max_threads
    hw_cpu_policy hw_cpu_realtime_mask hw_cpu_sockets
    hw_cpu_thread_policy hw_cpu_threads hw_device_id hw_disk_bus
    hw_disk_type hw_emulation_architecture hw_ephemeral_encryption
    hw_ephemeral_encryption_format hw_ephemeral_encryption_secret_uuid
    hw_firmware_stateless hw_firmware_type hw_floppy_bus hw_input_bus
    hw_ipxe_boot hw_locked_memory hw_machine_type hw_maxphysaddr_bits
    hw_maxphysaddr_mode hw_mem_encryption hw_mem_encryption_model
    hw_mem_page_size hw_numa_cpus hw_numa_mem hw_numa_nodes
    hw_pci_numa_affinity_policy hw_pmu hw_pointer_model
    hw_qemu_guest_agent hw_redirected_usb_ports hw_rescue_bus
    hw_rescue_device hw_rng_model hw_scsi_model hw_serial_port_count
    hw_sound_model hw_time_hpet hw_tpm_model hw_tpm_version hw_usb_model
    hw_video_model hw_video_ram hw_vif_model hw_vif_multiqueue_enabled
    hw_viommu_model hw_virtio_packed_ring hw_vm_mode hw_watchdog_action
    img_bdm_v2 img_bittorrent img_block_device_mapping img_cache_in_nova
    img_compression_level img_config_drive img_hide_hypervisor_id
    img_hv_requested_version img_hv_type img_linked_clone img_mappings
    img_owner_id img_root_device_name img_signature
    img_signature_certificate_uuid img_signature_hash_method
    img_signature_key_type img_use_agent img_version os_admin_user
    os_command_line os_distro os_require_quiesce os_secure_boot
    os_skip_agent_inject_files_at_boot os_skip_agent_inject_ssh os_type
    traits_required
""".split())
#: nova 34's ImageMetaProps ``IntegerField`` properties: nova holds
#: ``'04'`` as 4.
NOVA_INTEGER_IMAGE_PROPERTIES = frozenset("""
    hw_cpu_cores hw_cpu_max_cores hw_cpu_max_sockets hw_cpu_max_threads
    hw_cpu_sockets hw_cpu_threads hw_device_id hw_maxphysaddr_bits
    hw_numa_nodes hw_redirected_usb_ports hw_serial_port_count hw_video_ram
    img_compression_level img_version
""".split())
#: nova 34's ImageMetaProps ``FlexibleBooleanField`` properties: nova holds
#: ``'yes'`` as True and any other word as False.
NOVA_BOOLEAN_IMAGE_PROPERTIES = frozenset("""
    hw_boot_menu hw_ephemeral_encryption hw_firmware_stateless hw_ipxe_boot
    hw_locked_memory hw_mem_encryption hw_pmu hw_qemu_guest_agent
    hw_time_hpet hw_vif_multiqueue_enabled hw_virtio_packed_ring img_bdm_v2
    img_bittorrent img_cache_in_nova img_hide_hypervisor_id img_linked_clone
    img_use_agent os_require_quiesce os_skip_agent_inject_files_at_boot
    os_skip_agent_inject_ssh
""".split())
#: nova 34's legacy image property names (``ImageMetaProps.
#: _legacy_property_map``): nova reads an image still using one as having
#: the current property.
NOVA_LEGACY_IMAGE_PROPERTIES = {
    "architecture": "hw_architecture", "owner_id": "img_owner_id",
    "vmware_disktype": "hw_disk_type", "vmware_image_version": "img_version",
    "vmware_ostype": "os_distro", "auto_disk_config": "hw_auto_disk_config",
    "ipxe_boot": "hw_ipxe_boot", "xenapi_device_id": "hw_device_id",
    "xenapi_image_compression_level": "img_compression_level",
    "vmware_linked_clone": "img_linked_clone",
    "xenapi_use_agent": "img_use_agent",
    "xenapi_skip_agent_inject_ssh": "os_skip_agent_inject_ssh",
    "xenapi_skip_agent_inject_files_at_boot":
        "os_skip_agent_inject_files_at_boot",
    "cache_in_nova": "img_cache_in_nova", "vm_mode": "hw_vm_mode",
    "bittorrent": "img_bittorrent", "mappings": "img_mappings",
    "block_device_mapping": "img_block_device_mapping",
    "bdm_v2": "img_bdm_v2", "root_device_name": "img_root_device_name",
    "hypervisor_version_requires": "img_hv_requested_version",
    "hypervisor_type": "img_hv_type",
}


def nova_image_properties(props: Mapping[str, Any]) -> dict[str, Any]:
    """``props`` as nova's ``ImageMetaProps.from_dict`` reads them: a legacy
    name stands for its current one unless that is set (not None or
    empty) itself; so does ``vmware_adaptertype`` for the disk bus
    (``ide``, else ``scsi`` with it as the SCSI model)."""
    out = dict(props)
    legacy = {current: props[name] for name, current
              in NOVA_LEGACY_IMAGE_PROPERTIES.items() if name in props}
    adapter = props.get("vmware_adaptertype")
    if adapter:
        # Not in nova's map: it sets two properties (_set_attr_from_
        # legacy_names), which today's names win over all the same.
        legacy.update({"hw_disk_bus": "ide"} if adapter == "ide"
                      else {"hw_disk_bus": "scsi", "hw_scsi_model": adapter})
    for current, value in legacy.items():
        if props.get(current) in (None, ""):
            out[current] = value
    return out


def with_legacy_names(current: str) -> tuple[str, ...]:
    """``current`` and the legacy names nova reads as it, in the order a
    value is looked for: today's name first."""
    return (current,) + tuple(
        legacy for legacy, name in NOVA_LEGACY_IMAGE_PROPERTIES.items()
        if name == current)
