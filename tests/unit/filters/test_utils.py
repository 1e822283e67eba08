"""Shared filter helpers: aggregate metadata, HostState lookups,
RequestFilter."""
import pytest

from scheduler.filters import utils
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _host(*metadata, **kw):
    return make_host(aggregates=tuple(
        Aggregate(i, f"agg{i}", md) for i, md in enumerate(metadata, 1)),
        **kw)


# --- aggregate metadata ------------------------------------------------------

def test_aggregate_values_are_the_raw_values_over_aggregates():
    host = _host({"k": "a, b", "x": "1"}, {"k": "c"}, {"other": "z"},
                 {"k": "c"})
    assert utils.aggregate_values(host, "k") == {"a, b", "c"}
    assert utils.aggregate_values(host, "missing") == set()
    assert utils.aggregate_values(make_host(), "k") == set()


def test_aggregate_metadata_splits_and_strips_comma_lists():
    host = _host({"k": "a, b ,c", "x": "1"}, {"k": "d", "y": "2"})
    assert utils.aggregate_metadata(host) == {
        "k": {"a", "b", "c", "d"}, "x": {"1"}, "y": {"2"}}


def test_aggregate_metadata_for_a_key_keeps_only_aggregates_with_it():
    host = _host({"k": "a", "x": "1"}, {"y": "2"})
    assert utils.aggregate_metadata(host, "k") == {"k": {"a"}, "x": {"1"}}
    assert utils.aggregate_metadata(host, "none") == {}


def test_aggregate_number():
    assert utils.aggregate_number(make_host(), "k", 3.0) == 3.0
    assert utils.aggregate_number(_host({"k": "2"}, {"k": "5"}), "k",
                                  3.0) == 2.0
    assert utils.aggregate_number(_host({"k": "9"}), "k", 3.0) == 9.0
    assert utils.aggregate_number(_host({"j": "1"}), "k", 3.0) == 3.0
    assert utils.aggregate_number(_host({"k": "4"}), "k", 3, int) == 4


# --- HostState lookups -------------------------------------------------------

def test_host_attribute_by_our_and_novas_names():
    host = make_host(memory_mb_total=4096, disk_gb_total=100,
                     disk_gb_used=30, nodename="node-1")
    assert utils.host_attribute(host, "memory_mb_total") == 4096
    assert utils.host_attribute(host, "free_ram_mb") == 4096
    assert utils.host_attribute(host, "total_usable_ram_mb") == 4096
    assert utils.host_attribute(host, "total_usable_disk_gb") == 100
    assert utils.host_attribute(host, "free_disk_mb") == 70 * 1024
    assert utils.host_attribute(host, "disk_mb_used") == 30 * 1024
    assert utils.host_attribute(host, "hypervisor_hostname") == "node-1"


@pytest.mark.parametrize("name", [
    "", "nope", "_private", "__class__", "consumed", "availability_zones"])
def test_host_attribute_is_none_for_non_attributes(name):
    assert utils.host_attribute(make_host(), name) is None


def test_lookup_path_walks_attributes_dicts_and_json():
    host = make_host(cpu_info={"arch": "x86_64",
                               "topology": {"cores": 4}},
                     stats={"gpu": "2", "nested": '{"a": {"b": 1}}'})
    assert utils.lookup_path(host, ("cpu_info", "arch"), False) == "x86_64"
    assert utils.lookup_path(host, ("cpu_info", "topology", "cores"),
                             False) == 4
    assert utils.lookup_path(host, ("stats", "nested", "a", "b"),
                             False) == 1
    assert utils.lookup_path(host, ("cpu_info", "nope"), False) is None
    assert utils.lookup_path(host, ("cpu_info", "arch", "x"), False) is None
    assert utils.lookup_path(host, ("stats", "gpu", "x"), False) is None
    assert utils.lookup_path(host, ("host", "x"), False) is None


def test_lookup_path_falls_back_to_stats_only_when_asked():
    host = make_host(stats={"gpu": "2", "hypervisor_type": "stat"},
                     hypervisor_type="QEMU")
    assert utils.lookup_path(host, ("gpu",), True) == "2"
    assert utils.lookup_path(host, ("gpu",), False) is None
    # an attribute wins over a stat of the same name
    assert utils.lookup_path(host, ("hypervisor_type",), True) == "QEMU"


# --- RequestFilter -----------------------------------------------------------

class Counting(RequestFilter):
    def __init__(self, conf, minimum):
        super().__init__(conf)
        self.minimum = minimum
        self.prepared = 0

    def prepare(self, spec):
        self.prepared += 1
        return PASS_ALL if self.minimum is None else self.minimum

    def passes(self, host, minimum):
        return host.vcpus_total >= minimum


def test_request_filter_prepares_once_per_filter_all(conf):
    hosts = [make_host(f"h{i}", node_id=i, vcpus_total=i)
             for i in range(1, 6)]
    f = Counting(conf, 3)
    assert [h.host for h in f.filter_all(hosts, make_spec())] == [
        "h3", "h4", "h5"]
    assert f.prepared == 1
    assert f.host_passes(hosts[0], make_spec()) is False
    assert f.host_passes(hosts[3], make_spec()) is True


def test_request_filter_pass_all_returns_every_host_in_order(conf):
    hosts = [make_host(f"h{i}", node_id=i, vcpus_total=i)
             for i in range(1, 4)]
    f = Counting(conf, None)
    passed = f.filter_all(hosts, make_spec())
    assert passed == hosts and passed is not hosts
    assert f.host_passes(hosts[0], make_spec()) is True


def test_request_filter_filter_all_equals_host_passes(conf):
    hosts = [make_host(f"h{i}", node_id=i, vcpus_total=i % 4)
             for i in range(10)]
    f = Counting(conf, 2)
    spec = make_spec()
    assert f.filter_all(hosts, spec) == [
        h for h in hosts if f.host_passes(h, spec)]
