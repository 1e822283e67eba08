"""Aggregates that reserve their hosts: for projects, for images, for
flavors. A host in no such aggregate passes all three.

AggregateMultiTenancyIsolation
    Metadata keys starting with ``filter_tenant_id`` (``filter_tenant_id``,
    ``filter_tenant_id2``, ...) hold comma-separated project ids; if the
    host's aggregates have any, the request's project must be one of them.
AggregateImagePropertiesIsolation
    For each metadata key of the host's aggregates (with
    ``[filter_scheduler] aggregate_image_properties_isolation_namespace``
    set, only keys starting with namespace + separator) that names one of
    nova 34's image properties (``ImageMetaProps``; any other key is
    skipped, as nova skips it), an image that has that property must have
    one of the key's comma-separated values (compared as strings). Images
    without the property pass. An image property under its legacy name
    (``architecture``, ``vm_mode``, ``hypervisor_type``, ...) counts as the
    current one, as nova reads it.
AggregateTypeAffinityFilter
    ``instance_type`` metadata holds comma-separated flavor names; if the
    host's aggregates have any, the flavor's name must be one of them.
"""
from collections.abc import Mapping
from typing import Any

from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import aggregate_metadata
from scheduler.filters.utils import aggregate_values

TENANT_PREFIX = "filter_tenant_id"
TYPE_KEY = "instance_type"
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
    name stands for its current one, which wins when both are set."""
    out = {NOVA_LEGACY_IMAGE_PROPERTIES[key]: value
           for key, value in props.items()
           if key in NOVA_LEGACY_IMAGE_PROPERTIES}
    out.update(props)
    return out


class AggregateMultiTenancyIsolation(RequestFilter):
    reason = "in an aggregate reserved for other projects"
    run_filter_once_per_request = True

    def prepare(self, spec):
        return spec.project_id

    def passes(self, host, project_id) -> bool:
        allowed = False   # no tenant key seen yet
        for agg in host.aggregates:
            for key, value in agg.metadata.items():
                if key.startswith(TENANT_PREFIX):
                    if project_id in {v.strip() for v in value.split(",")}:
                        return True
                    allowed = True
        return not allowed

    def explain(self, spec) -> str:
        return f"{self.reason} (project {spec.project_id})"


class AggregateImagePropertiesIsolation(RequestFilter):
    reason = "in an aggregate that excludes the image's properties"
    run_filter_once_per_request = True
    run_on_rebuild = True

    def prepare(self, spec):
        props = (spec.image or {}).get("properties") or {}
        if not props:
            return PASS_ALL
        fs = self.conf.filter_scheduler
        namespace = fs.aggregate_image_properties_isolation_namespace
        prefix = (namespace + fs.aggregate_image_properties_isolation_separator
                  if namespace else None)
        return nova_image_properties(props), prefix

    def passes(self, host, prepared) -> bool:
        if not host.aggregates:
            return True
        props, prefix = prepared
        for key, options in aggregate_metadata(host).items():
            if prefix is not None and not key.startswith(prefix):
                continue
            if key not in NOVA_IMAGE_PROPERTIES:
                continue
            prop = props.get(key)
            if prop and str(prop) not in options:
                return False
        return True


class AggregateTypeAffinityFilter(RequestFilter):
    reason = "in an aggregate reserved for other flavors"
    run_filter_once_per_request = True

    def prepare(self, spec):
        return spec.flavor.name

    def passes(self, host, flavor_name) -> bool:
        values = aggregate_values(host, TYPE_KEY)
        if not values:
            return True
        return any(flavor_name in {v.strip() for v in value.split(",")}
                   for value in values)

    def explain(self, spec) -> str:
        return f"{self.reason} (flavor {spec.flavor.name})"
