"""RamFilter, CoreFilter, DiskFilter: boundaries, ratios and limits."""
import pytest

from scheduler.filters.resources import CoreFilter
from scheduler.filters.resources import DiskFilter
from scheduler.filters.resources import RamFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _ram(conf, need, **host):
    return RamFilter(conf).host_passes(make_host(**host),
                                       make_spec(flavor={"memory_mb": need}))


def _core(conf, need, **host):
    return CoreFilter(conf).host_passes(make_host(**host),
                                        make_spec(flavor={"vcpus": need}))


def _disk(conf, flavor, **host):
    return DiskFilter(conf).host_passes(make_host(**host),
                                        make_spec(flavor=flavor))


# --- RamFilter ---------------------------------------------------------------

def test_ram_exactly_fits(conf):
    assert _ram(conf, 4096, memory_mb_total=4096)


def test_ram_one_mb_over_fails(conf):
    assert not _ram(conf, 4097, memory_mb_total=4096)


def test_ram_used_is_taken_into_account(conf):
    assert _ram(conf, 3072, memory_mb_total=4096, memory_mb_used=1024)
    assert not _ram(conf, 3073, memory_mb_total=4096, memory_mb_used=1024)


def test_ram_ratio_overcommits(conf):
    # limit 6144, used 4096: 2048 left
    host = {"memory_mb_total": 4096, "memory_mb_used": 4096,
            "ram_allocation_ratio": 1.5}
    assert _ram(conf, 2048, **host)
    assert not _ram(conf, 2049, **host)


def test_ram_flavor_bigger_than_physical_fails_whatever_the_ratio(conf):
    assert not _ram(conf, 4097, memory_mb_total=4096,
                    ram_allocation_ratio=100.0)


def test_ram_overcommitted_host_fails(conf):
    # used above the limit (ratio lowered after the fact)
    assert not _ram(conf, 1, memory_mb_total=4096, memory_mb_used=5000)


def test_ram_limits_and_explain(conf):
    f = RamFilter(conf)
    host = make_host(memory_mb_total=4096, ram_allocation_ratio=1.5)
    assert f.limits(host) == {"memory_mb": 6144.0}
    assert f.explain(make_spec(flavor={"memory_mb": 4096})) == \
        "insufficient RAM: need 4096 MB"
    assert f.run_filter_once_per_request is False


# --- CoreFilter --------------------------------------------------------------

def test_core_exactly_fits(conf):
    assert _core(conf, 8, vcpus_total=8)


def test_core_one_over_fails(conf):
    assert not _core(conf, 9, vcpus_total=8, cpu_allocation_ratio=1.0)


def test_core_ratio_overcommits(conf):
    host = {"vcpus_total": 4, "vcpus_used": 60, "cpu_allocation_ratio": 16.0}
    assert _core(conf, 4, **host)
    assert not _core(conf, 5, **host)


def test_core_flavor_bigger_than_physical_fails_whatever_the_ratio(conf):
    assert not _core(conf, 9, vcpus_total=8, cpu_allocation_ratio=16.0)


def test_core_limits_and_explain(conf):
    f = CoreFilter(conf)
    assert f.limits(make_host(vcpus_total=8, cpu_allocation_ratio=4.0)) == \
        {"vcpu": 32.0}
    assert f.explain(make_spec(flavor={"vcpus": 3})) == \
        "insufficient vCPUs: need 3"


# --- DiskFilter --------------------------------------------------------------

def test_disk_exactly_fits(conf):
    assert _disk(conf, {"root_gb": 60, "ephemeral_gb": 40},
                 disk_gb_total=100)


def test_disk_one_gb_over_fails(conf):
    assert not _disk(conf, {"root_gb": 61, "ephemeral_gb": 40},
                     disk_gb_total=100)


def test_disk_counts_swap(conf):
    assert _disk(conf, {"root_gb": 99, "swap": 1024}, disk_gb_total=100)
    assert not _disk(conf, {"root_gb": 99, "swap": 1025},
                     disk_gb_total=100)


def test_disk_used_and_ratio(conf):
    host = {"disk_gb_total": 100, "disk_gb_used": 150,
            "disk_allocation_ratio": 2.0}
    assert _disk(conf, {"root_gb": 50}, **host)
    assert not _disk(conf, {"root_gb": 51}, **host)


def test_disk_flavor_bigger_than_physical_fails_whatever_the_ratio(conf):
    assert not _disk(conf, {"root_gb": 101}, disk_gb_total=100,
                     disk_allocation_ratio=10.0)


def test_disk_limits_and_explain(conf):
    f = DiskFilter(conf)
    assert f.limits(make_host(disk_gb_total=100,
                              disk_allocation_ratio=1.5)) == \
        {"disk_gb": 150.0}
    assert f.explain(make_spec(flavor={"root_gb": 10, "swap": 512})) == \
        "insufficient disk: need 11 GB"


@pytest.mark.parametrize("cls", [RamFilter, CoreFilter, DiskFilter])
def test_filter_all_equals_host_passes(conf, cls):
    hosts = [make_host(f"h{i}", node_id=i, memory_mb_total=1024 * i,
                       vcpus_total=i, disk_gb_total=10 * i)
             for i in range(1, 7)]
    spec = make_spec(flavor={"memory_mb": 3072, "vcpus": 3, "root_gb": 30})
    f = cls(conf)
    expected = [h for h in hosts if f.host_passes(h, spec)]
    assert f.filter_all(hosts, spec) == expected
    assert [h.host for h in expected] == ["h3", "h4", "h5", "h6"]


def test_core_node_reporting_no_vcpus_is_not_judged(conf):
    # nova's CoreFilter passes a node whose vcpus total is 0 (not reported)
    assert _core(conf, 4, vcpus_total=0, vcpus_used=0)
