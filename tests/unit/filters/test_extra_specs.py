"""ComputeCapabilitiesFilter and AggregateInstanceExtraSpecsFilter."""
import pytest

from scheduler.decide import plugins
from scheduler.filters.extra_specs import AggregateInstanceExtraSpecsFilter
from scheduler.filters.extra_specs import ComputeCapabilitiesFilter
from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _spec(**extra_specs):
    return make_spec(flavor={"extra_specs": extra_specs})


# --- ComputeCapabilitiesFilter -----------------------------------------------

def _caps(conf, extra_specs, **host):
    return ComputeCapabilitiesFilter(conf).host_passes(
        make_host(**host), _spec(**extra_specs))


def test_caps_no_extra_specs_passes(conf):
    assert _caps(conf, {})


def test_caps_other_scopes_are_skipped(conf):
    assert _caps(conf, {"hw:cpu_policy": "shared",
                        "aggregate_instance_extra_specs:ssd": "true",
                        "quota:disk_read_bytes_sec": "100"})


@pytest.mark.parametrize("key", ["capabilities:hypervisor_type",
                                 "hypervisor_type"])
def test_caps_scoped_and_unscoped_keys_check_attributes(conf, key):
    assert _caps(conf, {key: "QEMU"}, hypervisor_type="QEMU")
    assert not _caps(conf, {key: "QEMU"}, hypervisor_type="Xen")
    assert _caps(conf, {key: "s!= Xen"}, hypervisor_type="QEMU")


def test_caps_missing_attribute_fails(conf):
    assert not _caps(conf, {"capabilities:gpus": "= 1"})
    assert not _caps(conf, {"capabilities:host_ip": "1.2.3.4"},
                     host_ip=None)


def test_caps_unscoped_key_the_host_does_not_have_is_ignored(conf):
    """nova 34: an unscoped key that is neither a HostState attribute nor
    a stats key is not this filter's business (Liberty failed the host,
    which made it conflict with AggregateInstanceExtraSpecsFilter)."""
    assert _caps(conf, {"gpus": "1"})
    assert _caps(conf, {"ssd": "true", "hypervisor_type": "QEMU"},
                 hypervisor_type="QEMU")
    # ... but a host whose stats have it is judged on it
    assert _caps(conf, {"gpus": "1"}, stats={"gpus": "1"})
    assert not _caps(conf, {"gpus": "1"}, stats={"gpus": "2"})


def test_caps_unscoped_attribute_is_checked_even_when_unset(conf):
    """An attribute the host has, set to nothing, fails (nova: hasattr is
    true, the value is None)."""
    assert not _caps(conf, {"host_ip": "192.0.2.1"}, host_ip=None)
    assert _caps(conf, {"host_ip": "192.0.2.1"}, host_ip="192.0.2.1")
    # nova's names for our attributes are attributes too
    assert not _caps(conf, {"free_ram_mb": ">= 9000"})
    assert _caps(conf, {"free_ram_mb": ">= 8192"})


def test_caps_unscoped_and_aggregate_filter_no_longer_conflict(conf):
    """The point of nova's change: one unscoped key for the aggregate
    filter does not make every host fail the capabilities filter."""
    spec = _spec(ssd="true")
    host = make_host(aggregates=(Aggregate(1, "fast", {"ssd": "true"}),))
    assert ComputeCapabilitiesFilter(conf).host_passes(host, spec)
    assert AggregateInstanceExtraSpecsFilter(conf).host_passes(host, spec)


def test_caps_maxphysaddr_bits_as_nova(conf):
    """``hw:maxphysaddr_bits`` is checked as
    ``capabilities:cpu_info:maxphysaddr:bits >= N``."""
    spec = {"hw:maxphysaddr_bits": "42"}
    assert _caps(conf, spec, cpu_info={"maxphysaddr": {"bits": 46}})
    assert _caps(conf, spec, cpu_info={"maxphysaddr": {"bits": 42}})
    assert not _caps(conf, spec, cpu_info={"maxphysaddr": {"bits": 39}})
    assert not _caps(conf, spec, cpu_info={"arch": "x86_64"})
    assert "hw:maxphysaddr_bits=>= 42" in ComputeCapabilitiesFilter(
        conf).explain(_spec(**spec))


def test_caps_numeric_attribute_with_operators(conf):
    host = {"vcpus_total": 8, "memory_mb_total": 4096}
    assert _caps(conf, {"capabilities:vcpus_total": "= 8"}, **host)
    assert _caps(conf, {"capabilities:vcpus_total": "= 4"}, **host)
    assert not _caps(conf, {"capabilities:vcpus_total": "= 9"}, **host)
    assert not _caps(conf, {"capabilities:vcpus_total": "== 4"}, **host)
    assert _caps(conf, {"capabilities:vcpus_total": "8"}, **host)
    assert _caps(conf, {"capabilities:total_usable_ram_mb": ">= 4096"},
                 **host)


def test_caps_stats_are_the_fallback(conf):
    host = {"stats": {"gpu_type": "a100", "hypervisor_type": "stat"},
            "hypervisor_type": "QEMU"}
    assert _caps(conf, {"capabilities:gpu_type": "a100"}, **host)
    assert not _caps(conf, {"capabilities:gpu_type": "v100"}, **host)
    assert _caps(conf, {"capabilities:hypervisor_type": "QEMU"}, **host)


def test_caps_nested_paths(conf):
    host = {"cpu_info": {"arch": "x86_64", "topology": {"cores": 4},
                         "features": ["sse", "avx"]},
            "stats": {"json": '{"a": {"b": "deep"}}'}}
    assert _caps(conf, {"capabilities:cpu_info:arch": "x86_64"}, **host)
    assert not _caps(conf, {"capabilities:cpu_info:arch": "aarch64"},
                     **host)
    assert _caps(conf, {"capabilities:cpu_info:topology:cores": ">= 4"},
                 **host)
    assert not _caps(conf, {"capabilities:cpu_info:topology:cores": "= 5"},
                     **host)
    assert _caps(conf, {"capabilities:cpu_info:features": "<in> avx"},
                 **host)
    assert not _caps(conf, {"capabilities:cpu_info:features": "<in> vmx"},
                     **host)
    assert _caps(conf, {"capabilities:json:a:b": "deep"}, **host)
    assert not _caps(conf, {"capabilities:cpu_info:nope": "x"}, **host)
    assert not _caps(conf, {"capabilities:cpu_info:arch:x": "x"}, **host)


def test_caps_every_spec_must_match(conf):
    host = {"hypervisor_type": "QEMU", "vcpus_total": 8}
    assert _caps(conf, {"capabilities:hypervisor_type": "QEMU",
                        "capabilities:vcpus_total": ">= 8"}, **host)
    assert not _caps(conf, {"capabilities:hypervisor_type": "QEMU",
                            "capabilities:vcpus_total": ">= 16"}, **host)


def test_caps_private_names_and_methods_are_not_capabilities(conf):
    assert not _caps(conf, {"capabilities:consumed": "x"})
    assert not _caps(conf, {"capabilities:__class__": "<in> HostState"})


def test_caps_non_string_requirements(conf):
    assert _caps(conf, {"capabilities:vcpus_total": 8}, vcpus_total=8)
    assert _caps(conf, {"capabilities:service_up": True})


def test_caps_filter_all_matches_host_passes(conf):
    hosts = [make_host("a", node_id=1, hypervisor_type="QEMU"),
             make_host("b", node_id=2, hypervisor_type="Xen"),
             make_host("c", node_id=3, stats={"hypervisor_type": "QEMU"})]
    f = ComputeCapabilitiesFilter(conf)
    spec = _spec(**{"capabilities:hypervisor_type": "QEMU"})
    assert [h.host for h in f.filter_all(hosts, spec)] == ["a", "c"]
    assert f.filter_all(hosts, spec) == [h for h in hosts
                                         if f.host_passes(h, spec)]


def test_caps_shape(conf):
    f = ComputeCapabilitiesFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(_spec()) == f.reason
    assert f.explain(_spec(**{"hw:x": "1", "a": "1", "b": "2", "c": "3",
                              "d": "4"})) == (
        f"{f.reason}: a=1, b=2, c=3 and 1 more")


# --- AggregateInstanceExtraSpecsFilter ---------------------------------------

def _agg_host(*metadata):
    return make_host(aggregates=tuple(
        Aggregate(i, f"agg{i}", md) for i, md in enumerate(metadata, 1)))


def _aggs(conf, extra_specs, *metadata):
    return AggregateInstanceExtraSpecsFilter(conf).host_passes(
        _agg_host(*metadata), _spec(**extra_specs))


def test_aggs_no_extra_specs_passes(conf):
    assert _aggs(conf, {})
    assert _aggs(conf, {}, {"ssd": "true"})


def test_aggs_other_scopes_are_skipped(conf):
    assert _aggs(conf, {"capabilities:hypervisor_type": "QEMU",
                        "hw:cpu_policy": "shared"})


@pytest.mark.parametrize("key", ["aggregate_instance_extra_specs:ssd",
                                 "ssd"])
def test_aggs_scoped_and_unscoped_keys(conf, key):
    assert _aggs(conf, {key: "true"}, {"ssd": "true"})
    assert not _aggs(conf, {key: "true"}, {"ssd": "false"})
    assert not _aggs(conf, {key: "true"}, {"hdd": "true"})
    assert not _aggs(conf, {key: "true"})


def test_aggs_any_value_over_all_aggregates_may_match(conf):
    assert _aggs(conf, {"gpu": "v100"}, {"gpu": "a100, v100"})
    assert _aggs(conf, {"gpu": "v100"}, {"gpu": "a100"}, {"gpu": "v100"})
    assert not _aggs(conf, {"gpu": "h100"}, {"gpu": "a100, v100"})


def test_aggs_operators(conf):
    assert _aggs(conf, {"speed": ">= 10"}, {"speed": "25"})
    assert not _aggs(conf, {"speed": ">= 10"}, {"speed": "5"})
    assert _aggs(conf, {"tier": "<or> gold <or> silver"}, {"tier": "silver"})


def test_aggs_scoped_key_keeps_colons_after_the_scope(conf):
    key = "aggregate_instance_extra_specs:vendor:model"
    assert _aggs(conf, {key: "x"}, {"vendor:model": "x"})


def test_aggs_every_spec_must_match(conf):
    md = {"ssd": "true", "net": "10g"}
    assert _aggs(conf, {"ssd": "true", "net": "10g"}, md)
    assert not _aggs(conf, {"ssd": "true", "net": "40g"}, md)


def test_aggs_filter_all_matches_host_passes(conf):
    hosts = [_agg_host({"ssd": "true"}), _agg_host(), _agg_host(
        {"ssd": "false"}, {"ssd": "true"})]
    f = AggregateInstanceExtraSpecsFilter(conf)
    spec = _spec(ssd="true")
    assert f.filter_all(hosts, spec) == [hosts[0], hosts[2]]
    assert f.filter_all(hosts, spec) == [h for h in hosts
                                         if f.host_passes(h, spec)]


def test_aggs_shape(conf):
    f = AggregateInstanceExtraSpecsFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(_spec(ssd="true")) == f"{f.reason}: ssd=true"
    names = plugins.names(plugins.FILTER_NS)
    assert "AggregateInstanceExtraSpecsFilter" in names
    assert "ComputeCapabilitiesFilter" in names
