"""SimpleCIDRAffinityFilter: host_ip inside build_near_host_ip/cidr."""
import pytest

from scheduler import exception
from scheduler.decide import plugins
from scheduler.filters.cidr_affinity import SimpleCIDRAffinityFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _passes(conf, host_ip, **hints):
    return SimpleCIDRAffinityFilter(conf).host_passes(
        make_host(host_ip=host_ip), make_spec(scheduler_hints=hints))


def test_no_hint_passes_every_host(conf):
    assert _passes(conf, "192.0.2.1")
    assert _passes(conf, None)
    assert _passes(conf, "10.0.0.1", cidr="/8")
    assert _passes(conf, "10.0.0.1", build_near_host_ip="")


@pytest.mark.parametrize("host_ip,passes", [
    ("192.0.2.1", True), ("192.0.2.255", True), ("192.0.2.0", True),
    ("192.0.3.1", False), ("10.0.0.1", False)])
def test_default_cidr_is_24(conf, host_ip, passes):
    assert _passes(conf, host_ip, build_near_host_ip="192.0.2.77") is passes


@pytest.mark.parametrize("cidr,host_ip,passes", [
    ("/16", "192.0.200.1", True), ("/16", "192.1.0.1", False),
    ("/32", "192.0.2.77", True), ("/32", "192.0.2.78", False),
    ("/0", "8.8.8.8", True), (30, "192.0.2.76", True),
    (30, "192.0.2.80", False)])
def test_cidr_hint(conf, cidr, host_ip, passes):
    assert _passes(conf, host_ip, build_near_host_ip="192.0.2.77",
                   cidr=cidr) is passes


def test_ipv6(conf):
    near = {"build_near_host_ip": "2001:db8::1", "cidr": "/64"}
    assert _passes(conf, "2001:db8::ffff", **near)
    assert not _passes(conf, "2001:db8:1::1", **near)
    assert not _passes(conf, "192.0.2.1", **near)


def test_hints_wrapped_in_a_list(conf):
    assert _passes(conf, "192.0.2.1", build_near_host_ip=["192.0.2.9"],
                   cidr=["/24"])


@pytest.mark.parametrize("host_ip", [None, "", "not-an-ip"])
def test_host_without_a_valid_ip_fails(conf, host_ip):
    assert not _passes(conf, host_ip, build_near_host_ip="192.0.2.9")


@pytest.mark.parametrize("hints,field", [
    ({"build_near_host_ip": "300.1.1.1"}, "build_near_host_ip"),
    ({"build_near_host_ip": "near"}, "build_near_host_ip"),
    ({"build_near_host_ip": 5}, "build_near_host_ip"),
    ({"build_near_host_ip": "192.0.2.1", "cidr": "24"}, "cidr"),
    ({"build_near_host_ip": "192.0.2.1", "cidr": "/33"}, "cidr"),
    ({"build_near_host_ip": "192.0.2.1", "cidr": "/x"}, "cidr"),
    ({"build_near_host_ip": "192.0.2.1", "cidr": -1}, "cidr"),
])
def test_malformed_hints_are_invalid_requests(conf, hints, field):
    f = SimpleCIDRAffinityFilter(conf)
    with pytest.raises(exception.InvalidRequest) as e:
        f.filter_all([make_host(host_ip="192.0.2.1")],
                     make_spec(scheduler_hints=hints))
    assert e.value.message.startswith(f"spec.scheduler_hints.{field}: ")


def test_filter_all_matches_host_passes(conf):
    hosts = [make_host(f"h{i}", node_id=i, host_ip=f"192.0.{i}.5")
             for i in range(1, 5)]
    spec = make_spec(scheduler_hints={"build_near_host_ip": "192.0.2.1",
                                      "cidr": "/23"})
    f = SimpleCIDRAffinityFilter(conf)
    assert [h.host for h in f.filter_all(hosts, spec)] == ["h2", "h3"]
    assert f.filter_all(hosts, spec) == [h for h in hosts
                                         if f.host_passes(h, spec)]


def test_shape(conf):
    f = SimpleCIDRAffinityFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec()) == "not in the requested network"
    assert f.explain(make_spec(scheduler_hints={
        "build_near_host_ip": "192.0.2.77"})) == \
        "not in the requested network (192.0.2.0/24)"
    assert "SimpleCIDRAffinityFilter" in plugins.names(plugins.FILTER_NS)
