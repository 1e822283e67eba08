"""ImagePropertiesFilter: architecture, hypervisor type, VM mode and
hypervisor version against what the host supports."""
import pytest

from scheduler import exception
from scheduler.decide import plugins
from scheduler.filters import image_properties
from scheduler.filters.image_properties import ImagePropertiesFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec

KVM = (("x86_64", "kvm", "hvm"), ("i686", "kvm", "hvm"))
XEN = (("x86_64", "xen", "xen"), ("x86_64", "xen", "hvm"))


def _spec(**props):
    return make_spec(image={"id": "img", "properties": props})


def _passes(conf, props, supported=KVM, version=0):
    host = make_host(supported_instances=supported,
                     hypervisor_version=version)
    return ImagePropertiesFilter(conf).host_passes(host, _spec(**props))


def test_no_relevant_property_passes_any_host(conf):
    assert _passes(conf, {})
    assert _passes(conf, {"os_distro": "ubuntu"}, supported=())
    f = ImagePropertiesFilter(conf)
    assert f.host_passes(make_host(), make_spec())
    assert f.host_passes(make_host(), make_spec(image=None))


@pytest.mark.parametrize("props,passes", [
    ({"hw_architecture": "x86_64"}, True),
    ({"hw_architecture": "aarch64"}, False),
    ({"img_hv_type": "kvm"}, True),
    ({"img_hv_type": "xen"}, False),
    ({"hw_vm_mode": "hvm"}, True),
    ({"hw_vm_mode": "xen"}, False),
    ({"hw_architecture": "i686", "img_hv_type": "kvm",
      "hw_vm_mode": "hvm"}, True),
    ({"hw_architecture": "i686", "img_hv_type": "qemu"}, False),
])
def test_current_property_names(conf, props, passes):
    assert _passes(conf, props) is passes


@pytest.mark.parametrize("props,passes", [
    ({"architecture": "x86_64"}, True),
    ({"architecture": "ppc64le"}, False),
    ({"hypervisor_type": "kvm"}, True),
    ({"hypervisor_type": "hyperv"}, False),
    ({"vm_mode": "hvm"}, True),
    ({"vm_mode": "exe"}, False),
])
def test_liberty_property_names(conf, props, passes):
    assert _passes(conf, props) is passes


def test_current_name_wins_over_liberty_name(conf):
    assert _passes(conf, {"hw_architecture": "x86_64",
                          "architecture": "aarch64"})
    assert not _passes(conf, {"hw_architecture": "aarch64",
                              "architecture": "x86_64"})


def test_all_set_values_must_be_in_one_triple(conf):
    # x86_64 and xen each appear, but never in one triple with vm_mode exe
    assert not _passes(conf, {"hw_architecture": "x86_64",
                              "hw_vm_mode": "exe"}, supported=XEN)
    assert _passes(conf, {"hw_architecture": "x86_64", "hw_vm_mode": "xen"},
                   supported=XEN)


def test_values_are_compared_in_their_own_position(conf):
    # nova accepted "xen" anywhere in the triple; a host offering only
    # hypervisor xen with vm_mode hvm does not run vm_mode xen.
    host_triples = (("x86_64", "xen", "hvm"),)
    assert not _passes(conf, {"hw_vm_mode": "xen"}, supported=host_triples)
    assert _passes(conf, {"img_hv_type": "xen"}, supported=host_triples)


@pytest.mark.parametrize("props", [
    {"hw_architecture": "AMD64"}, {"hw_architecture": "X86_64"},
    {"architecture": "amd64"}, {"img_hv_type": "KVM"},
])
def test_values_are_canonicalized(conf, props):
    assert _passes(conf, props)


@pytest.mark.parametrize("alias,canonical", [
    ("i386", "i686"), ("i486", "i686"), ("i586", "i686"),
    ("x86_32", "i686"), ("amd64", "x86_64")])
def test_architecture_aliases(conf, alias, canonical):
    assert image_properties.canonicalize_arch(alias) == canonical
    assert _passes(conf, {"hw_architecture": alias},
                   supported=((canonical, "kvm", "hvm"),))


def test_hypervisor_and_vm_mode_aliases(conf):
    assert image_properties.canonicalize_hv_type("xapi") == "xen"
    assert image_properties.canonicalize_vm_mode("pv") == "xen"
    assert image_properties.canonicalize_vm_mode("hv") == "hvm"
    assert image_properties.canonicalize_vm_mode("baremetal") == "hvm"
    assert _passes(conf, {"img_hv_type": "xapi", "hw_vm_mode": "pv"},
                   supported=XEN)


def test_host_without_supported_instances_fails_when_something_is_asked(
        conf):
    assert not _passes(conf, {"hw_architecture": "x86_64"}, supported=())


def test_host_triple_with_missing_elements(conf):
    triples = (("x86_64", None, None),)
    assert _passes(conf, {"hw_architecture": "x86_64"}, supported=triples)
    assert not _passes(conf, {"img_hv_type": "kvm"}, supported=triples)


# --- default architecture option --------------------------------------------

def test_default_architecture_applies_to_images_without_one(conf):
    conf.set_override("image_properties_default_architecture", "aarch64",
                      group="filter_scheduler")
    arm = (("aarch64", "kvm", "hvm"),)
    assert not _passes(conf, {})
    assert _passes(conf, {}, supported=arm)
    assert _passes(conf, {"hw_architecture": "x86_64"})
    assert not _passes(conf, {"hw_architecture": "x86_64"}, supported=arm)


def test_default_architecture_option(conf):
    assert conf.filter_scheduler.image_properties_default_architecture \
        is None
    with pytest.raises(ValueError):
        conf.set_override("image_properties_default_architecture", "z80",
                          group="filter_scheduler")


# --- hypervisor version ------------------------------------------------------

@pytest.mark.parametrize("version,passes", [
    (6000000, True), (6001002, True), (5999999, False), (7000000, False)])
def test_version_predicate(conf, version, passes):
    props = {"hw_architecture": "x86_64",
             "img_hv_requested_version": ">=6.0, <7.0"}
    assert _passes(conf, props, version=version) is passes


@pytest.mark.parametrize("predicate,version,passes", [
    (">=6", 6000000, True), (">6", 6000000, False), (">6", 6000001, True),
    ("<6.1", 6000999, True), ("<=6.1", 6001000, True),
    ("<=6.1", 6001001, False), ("==6.1.2", 6001002, True),
    ("==6.1", 6001002, False), ("!=6.1.2", 6001002, False),
    ("!= 6.1.2", 6001003, True), (" >= 2.11 ", 2011000, True),
])
def test_version_operators(conf, predicate, version, passes):
    props = {"img_hv_type": "kvm", "img_hv_requested_version": predicate}
    assert _passes(conf, props, version=version) is passes


def test_liberty_version_property(conf):
    props = {"hw_architecture": "x86_64",
             "hypervisor_version_requires": ">=6.0"}
    assert not _passes(conf, props, version=5000000)
    assert _passes(conf, props, version=6000000)


def test_version_is_checked_without_other_properties(conf):
    # nova ignored the predicate when no arch/hv_type/vm_mode was set
    props = {"img_hv_requested_version": ">=6.0"}
    assert not _passes(conf, props, version=5000000, supported=())
    assert _passes(conf, props, version=6000000, supported=())


def test_host_with_unknown_version_is_not_judged_on_it(conf):
    props = {"hw_architecture": "x86_64",
             "img_hv_requested_version": ">=6.0"}
    assert _passes(conf, props, version=0)


@pytest.mark.parametrize("predicate", [
    "6.0", ">= six", "=>6", ">=6.0;<7", "", ">=6.0,", "~6"])
def test_malformed_predicate_is_an_invalid_request(conf, predicate):
    if not predicate:
        assert _passes(conf, {"img_hv_requested_version": predicate})
        return
    spec = _spec(img_hv_requested_version=predicate)
    f = ImagePropertiesFilter(conf)
    with pytest.raises(exception.InvalidRequest) as e:
        f.filter_all([make_host()], spec)
    assert e.value.message.startswith(
        "spec.image.properties.img_hv_requested_version: ")


def test_version_tuple():
    assert image_properties.version_tuple(6001002) == (6, 1, 2)
    assert image_properties.version_tuple(2011000) == (2, 11, 0)
    assert image_properties.version_tuple(1000) == (1, 0)
    assert image_properties.version_tuple(0) == ()


# --- shape -------------------------------------------------------------------

def test_filter_all_matches_host_passes(conf):
    hosts = [make_host("kvm", node_id=1, supported_instances=KVM),
             make_host("xen", node_id=2, supported_instances=XEN),
             make_host("none", node_id=3)]
    f = ImagePropertiesFilter(conf)
    for props in ({}, {"img_hv_type": "xen"},
                  {"hw_architecture": "x86_64"}):
        spec = _spec(**props)
        assert f.filter_all(hosts, spec) == [
            h for h in hosts if f.host_passes(h, spec)]
    assert [h.host for h in f.filter_all(hosts, _spec(img_hv_type="xen"))
            ] == ["xen"]


def test_shape(conf):
    f = ImagePropertiesFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec()) == f.reason
    assert f.explain(_spec(hw_architecture="aarch64",
                           img_hv_requested_version=">=6")) == (
        f"{f.reason}: hw_architecture=aarch64, "
        f"img_hv_requested_version=>=6")
    assert "ImagePropertiesFilter" in plugins.names(plugins.FILTER_NS)


# --- hw_maxphysaddr_bits (nova 34) --------------------------------------------

def _bits_passes(conf, bits, host_cpu_info):
    return ImagePropertiesFilter(conf).host_passes(
        make_host(cpu_info=host_cpu_info),
        _spec(hw_maxphysaddr_bits=bits))


def test_maxphysaddr_bits_must_fit_the_host(conf):
    assert _bits_passes(conf, "42", {"maxphysaddr": {"bits": 46}})
    assert _bits_passes(conf, 46, {"maxphysaddr": {"bits": 46}})
    assert not _bits_passes(conf, "47", {"maxphysaddr": {"bits": 46}})


def test_maxphysaddr_bits_host_that_does_not_report_it_passes(conf):
    """nova: ``if not bits: return True``."""
    assert _bits_passes(conf, "47", {})
    assert _bits_passes(conf, "47", {"maxphysaddr": {"mode": "emulate"}})


@pytest.mark.parametrize("bits", ["many", "0", "-3", True])
def test_maxphysaddr_bits_malformed_is_invalid_request(conf, bits):
    with pytest.raises(exception.InvalidRequest,
                       match="spec.image.properties.hw_maxphysaddr_bits"):
        _bits_passes(conf, bits, {"maxphysaddr": {"bits": 46}})
