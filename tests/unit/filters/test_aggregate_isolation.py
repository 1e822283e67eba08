"""AggregateMultiTenancyIsolation, AggregateImagePropertiesIsolation,
AggregateTypeAffinityFilter."""
import pytest

from scheduler.decide import plugins
from scheduler.filters.aggregate_isolation import \
    AggregateImagePropertiesIsolation
from scheduler.filters.aggregate_isolation import \
    AggregateMultiTenancyIsolation
from scheduler.filters.aggregate_isolation import AggregateTypeAffinityFilter
from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _host(*metadata, name="h1", node_id=1):
    return make_host(name, node_id=node_id, aggregates=tuple(
        Aggregate(i, f"agg{i}", md) for i, md in enumerate(metadata, 1)))


# --- AggregateMultiTenancyIsolation ------------------------------------------

def _tenant(conf, project, *metadata):
    return AggregateMultiTenancyIsolation(conf).host_passes(
        _host(*metadata), make_spec(project_id=project))


def test_tenant_host_in_no_tenant_aggregate_passes(conf):
    assert _tenant(conf, "p1")
    assert _tenant(conf, "p1", {"availability_zone": "az1"})


def test_tenant_project_must_be_listed(conf):
    assert _tenant(conf, "p1", {"filter_tenant_id": "p1"})
    assert not _tenant(conf, "p2", {"filter_tenant_id": "p1"})


def test_tenant_comma_lists_and_several_aggregates(conf):
    assert _tenant(conf, "p2", {"filter_tenant_id": "p1, p2 ,p3"})
    assert _tenant(conf, "p3", {"filter_tenant_id": "p1"},
                   {"filter_tenant_id": "p3"})
    assert not _tenant(conf, "p4", {"filter_tenant_id": "p1"},
                       {"filter_tenant_id": "p3"})


def test_tenant_any_key_prefixed_filter_tenant_id_counts(conf):
    md = {"filter_tenant_id": "p1", "filter_tenant_id2": "p2",
          "filter_tenant_id_extra": "p3"}
    for project in ("p1", "p2", "p3"):
        assert _tenant(conf, project, md)
    assert not _tenant(conf, "p4", md)
    # a key that merely contains it does not count
    assert _tenant(conf, "p4", {"x_filter_tenant_id": "p1"})


def test_tenant_request_without_project_fails_on_reserved_hosts(conf):
    assert not _tenant(conf, None, {"filter_tenant_id": "p1"})
    assert _tenant(conf, None)


def test_tenant_reserved_aggregate_and_open_aggregate(conf):
    # one reserving aggregate is enough to reserve the host
    assert not _tenant(conf, "p2", {"filter_tenant_id": "p1"},
                       {"availability_zone": "az1"})


def test_tenant_shape(conf):
    f = AggregateMultiTenancyIsolation(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec(project_id="p9")) == \
        "in an aggregate reserved for other projects (project p9)"


# --- AggregateImagePropertiesIsolation ---------------------------------------

def _image(conf, props, *metadata):
    return AggregateImagePropertiesIsolation(conf).host_passes(
        _host(*metadata), make_spec(image={"id": "i", "properties": props}))


def test_image_no_aggregate_or_no_properties_passes(conf):
    assert _image(conf, {"os_distro": "windows"})
    assert _image(conf, {}, {"os_distro": "windows"})
    f = AggregateImagePropertiesIsolation(conf)
    assert f.host_passes(_host({"os_distro": "windows"}), make_spec())


def test_image_property_must_be_an_allowed_value(conf):
    md = {"os_distro": "windows, freebsd"}
    assert _image(conf, {"os_distro": "windows"}, md)
    assert _image(conf, {"os_distro": "freebsd"}, md)
    assert not _image(conf, {"os_distro": "ubuntu"}, md)


def test_image_without_the_property_passes(conf):
    assert _image(conf, {"hw_disk_bus": "scsi"}, {"os_distro": "windows"})
    assert _image(conf, {"os_distro": ""}, {"os_distro": "windows"})


def test_image_values_over_several_aggregates(conf):
    assert _image(conf, {"os_distro": "linux"}, {"os_distro": "windows"},
                  {"os_distro": "linux"})


def test_image_values_compare_as_strings(conf):
    assert _image(conf, {"hw_cpu_cores": 4}, {"hw_cpu_cores": "4"})
    assert not _image(conf, {"hw_cpu_cores": 4}, {"hw_cpu_cores": "8"})


def test_image_typed_properties_are_coerced_as_novas(conf):
    # nova's ImageMetaProps holds hw_cpu_cores as an IntegerField and
    # os_require_quiesce as a FlexibleBooleanField, and its filter compares
    # str() of the typed value: '04' is 4, 'yes' is True, and 'no' is False,
    # which (being falsy) is not judged at all.
    assert _image(conf, {"hw_cpu_cores": "04"}, {"hw_cpu_cores": "4"})
    assert not _image(conf, {"hw_cpu_cores": "04"}, {"hw_cpu_cores": "04"})
    assert _image(conf, {"os_require_quiesce": "yes"},
                  {"os_require_quiesce": "True"})
    assert _image(conf, {"hw_pmu": "false"}, {"hw_pmu": "True"})
    assert _image(conf, {"hw_cpu_cores": "0"}, {"hw_cpu_cores": "4"})


def test_image_a_boolean_integer_property_is_novas_integer(conf):
    # nova's IntegerField holds True as int(True), 1: str() of it is '1'.
    assert _image(conf, {"hw_cpu_cores": True}, {"hw_cpu_cores": "1"})
    assert not _image(conf, {"hw_cpu_cores": True},
                      {"hw_cpu_cores": "True"})
    assert _image(conf, {"hw_cpu_cores": False}, {"hw_cpu_cores": "4"})


def test_image_only_novas_image_properties_are_checked(conf):
    # nova 34 reads the key from ImageMetaProps and skips any it has not.
    md = {"os_distro": "windows", "availability_zone": "az1",
          "license": "gold"}
    assert _image(conf, {"os_distro": "windows", "availability_zone": "az2",
                         "license": "bronze"}, md)
    assert not _image(conf, {"os_distro": "linux"}, md)


def test_image_legacy_property_names_are_read_as_novas(conf):
    # nova's ImageMetaProps.from_dict sets hw_architecture from a Liberty
    # image's "architecture" (and so on): the aggregate keys name the new
    # property, and the image is judged by it.
    assert not _image(conf, {"architecture": "aarch64"},
                      {"hw_architecture": "x86_64"})
    assert not _image(conf, {"hypervisor_type": "xen"},
                      {"img_hv_type": "kvm"})
    assert not _image(conf, {"vmware_ostype": "windows"},
                      {"os_distro": "linux"})
    assert _image(conf, {"vm_mode": "hvm"}, {"hw_vm_mode": "hvm"})
    # the current name wins over the legacy one, as in nova
    assert _image(conf, {"architecture": "aarch64",
                         "hw_architecture": "x86_64"},
                  {"hw_architecture": "x86_64"})


def test_image_vmware_adaptertype_is_read_as_novas(conf):
    # nova's ImageMetaProps.from_dict reads the legacy vmware_adaptertype
    # as a disk bus ("ide", else "scsi" with that SCSI model); the current
    # hw_disk_bus / hw_scsi_model win over it.
    assert not _image(conf, {"vmware_adaptertype": "lsiLogic"},
                      {"hw_disk_bus": "virtio"})
    assert _image(conf, {"vmware_adaptertype": "lsiLogic"},
                  {"hw_disk_bus": "scsi", "hw_scsi_model": "lsilogic"})
    assert _image(conf, {"vmware_adaptertype": "ide"},
                  {"hw_disk_bus": "ide"})
    assert not _image(conf, {"vmware_adaptertype": "ide"},
                      {"hw_disk_bus": "scsi"})
    assert _image(conf, {"vmware_adaptertype": "ide",
                         "hw_disk_bus": "virtio"}, {"hw_disk_bus": "virtio"})


def test_image_enum_properties_are_canonicalized_as_novas(conf):
    # nova's ImageMetaProps canonicalizes its architecture, hypervisor type
    # and VM mode fields (amd64 is x86_64, xapi is xen, hv is hvm), so an
    # image spelling the alias fits an aggregate naming the canonical value.
    assert _image(conf, {"hw_architecture": "AMD64"},
                  {"hw_architecture": "x86_64"})
    assert _image(conf, {"architecture": "i386"},
                  {"hw_architecture": "i686"})
    assert _image(conf, {"img_hv_type": "xapi"}, {"img_hv_type": "xen"})
    assert _image(conf, {"hw_vm_mode": "hv"}, {"hw_vm_mode": "hvm"})
    assert _image(conf, {"os_type": "Windows"}, {"os_type": "windows"})
    assert not _image(conf, {"hw_architecture": "amd64"},
                      {"hw_architecture": "aarch64"})


def test_image_every_canonicalizing_field_is_canonicalized_as_novas(conf):
    # nova 34's hw_emulation_architecture is an ArchitectureField like
    # hw_architecture, and its SCSIModel and VIFModel fields lower-case
    # the value and map the legacy VMware names: nova passes each image
    # below on a host whose aggregate names the canonical value.
    assert _image(conf, {"hw_emulation_architecture": "AMD64"},
                  {"hw_emulation_architecture": "x86_64"})
    assert _image(conf, {"hw_scsi_model": "VirtIO-SCSI"},
                  {"hw_scsi_model": "virtio-scsi"})
    assert _image(conf, {"hw_scsi_model": "lsiLogicSAS"},
                  {"hw_scsi_model": "lsisas1068"})
    assert _image(conf, {"hw_vif_model": "VirtIO"},
                  {"hw_vif_model": "virtio"})
    assert _image(conf, {"hw_vif_model": "VirtualE1000"},
                  {"hw_vif_model": "e1000"})
    assert not _image(conf, {"hw_vif_model": "VirtualE1000"},
                      {"hw_vif_model": "virtio"})


def test_image_namespace_limits_the_keys(conf):
    conf.set_override("aggregate_image_properties_isolation_namespace",
                      "hw", group="filter_scheduler")
    conf.set_override("aggregate_image_properties_isolation_separator",
                      "_", group="filter_scheduler")
    md = {"hw_disk_bus": "scsi", "os_distro": "windows"}
    assert _image(conf, {"hw_disk_bus": "scsi", "os_distro": "linux"}, md)
    assert not _image(conf, {"hw_disk_bus": "ide"}, md)


def test_image_namespaced_keys_that_are_no_image_property_are_skipped(
        conf):
    conf.set_override("aggregate_image_properties_isolation_namespace",
                      "iso", group="filter_scheduler")
    assert _image(conf, {"iso.os_distro": "linux"},
                  {"iso.os_distro": "windows"})


def test_image_option_defaults(conf):
    fs = conf.filter_scheduler
    assert fs.aggregate_image_properties_isolation_namespace is None
    assert fs.aggregate_image_properties_isolation_separator == "."


def test_image_shape(conf):
    f = AggregateImagePropertiesIsolation(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec()) == \
        "in an aggregate that excludes the image's properties"


# --- AggregateTypeAffinityFilter ---------------------------------------------

def _type(conf, flavor, *metadata):
    return AggregateTypeAffinityFilter(conf).host_passes(
        _host(*metadata), make_spec(flavor={"name": flavor}))


def test_type_host_in_no_typed_aggregate_passes(conf):
    assert _type(conf, "m1.small")
    assert _type(conf, "m1.small", {"availability_zone": "az1"})


@pytest.mark.parametrize("value,passes", [
    ("m1.small", True), ("m1.large", False), ("m1.tiny,m1.small", True),
    (" m1.tiny , m1.small ", True), ("m1.smaller", False), ("m1", False)])
def test_type_flavor_name_must_be_listed(conf, value, passes):
    assert _type(conf, "m1.small", {"instance_type": value}) is passes


def test_type_any_aggregate_may_list_it(conf):
    assert _type(conf, "m1.small", {"instance_type": "m1.large"},
                 {"instance_type": "m1.small"})
    assert not _type(conf, "m1.small", {"instance_type": "m1.large"},
                     {"instance_type": "m1.xlarge"})


def test_type_flavor_without_a_name_fails_on_typed_hosts(conf):
    assert not _type(conf, None, {"instance_type": "m1.small"})
    assert _type(conf, None)


def test_type_shape(conf):
    f = AggregateTypeAffinityFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec()) == \
        "in an aggregate reserved for other flavors (flavor m1.small)"


def test_filter_all_matches_host_passes(conf):
    hosts = [_host(name="open", node_id=1),
             _host({"filter_tenant_id": "p1", "instance_type": "m1.small",
                    "os_distro": "linux"}, name="p1", node_id=2),
             _host({"filter_tenant_id": "p2", "instance_type": "m1.big",
                    "os_distro": "windows"}, name="p2", node_id=3)]
    spec = make_spec(project_id="p1",
                     image={"properties": {"os_distro": "linux"}})
    for cls in (AggregateMultiTenancyIsolation,
                AggregateImagePropertiesIsolation,
                AggregateTypeAffinityFilter):
        f = cls(conf)
        passed = f.filter_all(hosts, spec)
        assert [h.host for h in passed] == ["open", "p1"]
        assert passed == [h for h in hosts if f.host_passes(h, spec)]


def test_entry_points():
    assert {"AggregateMultiTenancyIsolation",
            "AggregateImagePropertiesIsolation",
            "AggregateTypeAffinityFilter"} <= set(
        plugins.names(plugins.FILTER_NS))
