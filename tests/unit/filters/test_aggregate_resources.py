"""AggregateRamFilter, AggregateCoreFilter, AggregateDiskFilter: the
ratio is the smallest aggregate value, else the host's own."""
import pytest

from scheduler.decide import plugins
from scheduler.filters.aggregate_resources import AggregateCoreFilter
from scheduler.filters.aggregate_resources import AggregateDiskFilter
from scheduler.filters.aggregate_resources import AggregateRamFilter
from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _aggs(key, *values):
    return tuple(Aggregate(i, f"agg{i}", {key: v})
                 for i, v in enumerate(values, 1))


# --- AggregateRamFilter ------------------------------------------------------

def _ram(conf, need, ratios=(), **host):
    host.setdefault("memory_mb_total", 4096)
    host.setdefault("memory_mb_used", 4096)
    h = make_host(aggregates=_aggs("ram_allocation_ratio", *ratios), **host)
    return AggregateRamFilter(conf).host_passes(
        h, make_spec(flavor={"memory_mb": need}))


def test_ram_without_aggregate_uses_the_host_ratio(conf):
    # limit 4096 * 1.5 = 6144, used 4096: 2048 left
    assert _ram(conf, 2048, ram_allocation_ratio=1.5)
    assert not _ram(conf, 2049, ram_allocation_ratio=1.5)
    assert not _ram(conf, 1, ram_allocation_ratio=1.0)


def test_ram_aggregate_ratio_overrides_the_host_ratio(conf):
    assert _ram(conf, 4096, ("2.0",), ram_allocation_ratio=1.0)
    assert not _ram(conf, 4097, ("2.0",), ram_allocation_ratio=1.0)
    assert not _ram(conf, 1, ("1.0",), ram_allocation_ratio=3.0)


def test_ram_smallest_aggregate_ratio_wins(conf):
    assert _ram(conf, 2048, ("3.0", "1.5", "2.0"))
    assert not _ram(conf, 2049, ("3.0", "1.5", "2.0"))


@pytest.mark.parametrize("bad", ["x", "", "1.5x", "nan", "inf"])
def test_ram_bad_value_falls_back_to_the_host_ratio(conf, bad):
    assert _ram(conf, 2048, (bad, "3.0"), ram_allocation_ratio=1.5)
    assert not _ram(conf, 2049, (bad, "3.0"), ram_allocation_ratio=1.5)


def test_ram_flavor_bigger_than_physical_fails_whatever_the_ratio(conf):
    assert not _ram(conf, 4097, ("100",), memory_mb_used=0)
    assert _ram(conf, 4096, ("100",), memory_mb_used=0)


def test_ram_aggregates_without_the_key_are_ignored(conf):
    host = make_host(memory_mb_total=4096, memory_mb_used=4096,
                     ram_allocation_ratio=1.5,
                     aggregates=(Aggregate(1, "az", {"availability_zone":
                                                     "az1"}),))
    f = AggregateRamFilter(conf)
    assert f.host_passes(host, make_spec(flavor={"memory_mb": 2048}))
    assert f.limits(host) == {"memory_mb": 6144.0}


def test_ram_limits_and_explain(conf):
    f = AggregateRamFilter(conf)
    host = make_host(memory_mb_total=4096,
                     aggregates=_aggs("ram_allocation_ratio", "2", "3"))
    assert f.limits(host) == {"memory_mb": 8192.0}
    assert f.explain(make_spec(flavor={"memory_mb": 512})) == \
        "insufficient RAM: need 512 MB"
    assert f.run_filter_once_per_request is False


# --- AggregateCoreFilter -----------------------------------------------------

def _core(conf, need, ratios=(), **host):
    host.setdefault("vcpus_total", 4)
    host.setdefault("vcpus_used", 4)
    h = make_host(aggregates=_aggs("cpu_allocation_ratio", *ratios), **host)
    return AggregateCoreFilter(conf).host_passes(
        h, make_spec(flavor={"vcpus": need}))


def test_core_without_aggregate_uses_the_host_ratio(conf):
    assert _core(conf, 4, cpu_allocation_ratio=2.0)
    assert not _core(conf, 5, cpu_allocation_ratio=2.0)


def test_core_smallest_aggregate_ratio_wins(conf):
    assert _core(conf, 4, ("4.0", "2.0"), cpu_allocation_ratio=16.0)
    assert not _core(conf, 5, ("4.0", "2.0"), cpu_allocation_ratio=16.0)


def test_core_bad_value_falls_back(conf):
    assert _core(conf, 4, ("many",), cpu_allocation_ratio=2.0)
    assert not _core(conf, 5, ("many",), cpu_allocation_ratio=2.0)


def test_core_flavor_bigger_than_physical_fails(conf):
    assert not _core(conf, 5, ("16",), vcpus_used=0)


def test_core_node_without_vcpus_is_not_judged(conf):
    assert _core(conf, 64, ("1",), vcpus_total=0, vcpus_used=0)


def test_core_limits_and_explain(conf):
    f = AggregateCoreFilter(conf)
    host = make_host(vcpus_total=8, cpu_allocation_ratio=16.0,
                     aggregates=_aggs("cpu_allocation_ratio", "4"))
    assert f.limits(host) == {"vcpu": 32.0}
    assert f.limits(make_host(vcpus_total=8, cpu_allocation_ratio=2.0)) == \
        {"vcpu": 16.0}
    assert f.explain(make_spec(flavor={"vcpus": 3})) == \
        "insufficient vCPUs: need 3"


# --- AggregateDiskFilter -----------------------------------------------------

def _disk(conf, flavor, ratios=(), **host):
    host.setdefault("disk_gb_total", 100)
    host.setdefault("disk_gb_used", 100)
    h = make_host(aggregates=_aggs("disk_allocation_ratio", *ratios), **host)
    return AggregateDiskFilter(conf).host_passes(h, make_spec(flavor=flavor))


def test_disk_aggregate_ratio(conf):
    assert _disk(conf, {"root_gb": 50}, ("1.5",))
    assert not _disk(conf, {"root_gb": 51}, ("1.5",))
    assert not _disk(conf, {"root_gb": 1}, ())


def test_disk_counts_ephemeral_and_swap(conf):
    assert _disk(conf, {"root_gb": 40, "ephemeral_gb": 9, "swap": 1024},
                 ("1.5",))
    assert not _disk(conf, {"root_gb": 40, "ephemeral_gb": 9, "swap": 1025},
                     ("1.5",))


def test_disk_bad_value_falls_back_and_physical_size_rule(conf):
    assert _disk(conf, {"root_gb": 50}, ("?",), disk_allocation_ratio=1.5)
    assert not _disk(conf, {"root_gb": 101}, ("10",), disk_gb_used=0)


def test_disk_limits_and_explain(conf):
    f = AggregateDiskFilter(conf)
    host = make_host(disk_gb_total=100,
                     aggregates=_aggs("disk_allocation_ratio", "2"))
    assert f.limits(host) == {"disk_gb": 200.0}
    assert f.explain(make_spec(flavor={"root_gb": 7})) == \
        "insufficient disk: need 7 GB"


def test_filter_all_matches_host_passes(conf):
    hosts = [make_host(f"h{i}", node_id=i, memory_mb_total=4096,
                       memory_mb_used=4096,
                       aggregates=_aggs("ram_allocation_ratio", r))
             for i, r in enumerate(["1.0", "1.5", "2.0", "bad"])]
    spec = make_spec(flavor={"memory_mb": 2048})
    f = AggregateRamFilter(conf)
    assert [h.host for h in f.filter_all(hosts, spec)] == ["h1", "h2"]


def test_entry_points():
    names = plugins.names(plugins.FILTER_NS)
    assert {"AggregateRamFilter", "AggregateCoreFilter",
            "AggregateDiskFilter"} <= set(names)
