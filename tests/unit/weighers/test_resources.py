"""RAMWeigher, CPUWeigher, DiskWeigher."""
import pytest

from scheduler.weighers.base import weigh_hosts
from scheduler.weighers.resources import CPUWeigher
from scheduler.weighers.resources import DiskWeigher
from scheduler.weighers.resources import RAMWeigher
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _order(weighed):
    return [w.host.host for w in weighed]


def test_raw_values_as_nova_physical_ram_and_disk_cpu_under_the_ratio(conf):
    """nova's RAMWeigher / DiskWeigher weigh free_ram_mb / free_disk_mb
    (total - used, no ratio); its CPUWeigher vcpus_total x ratio - used."""
    host = make_host(vcpus_total=8, vcpus_used=10, cpu_allocation_ratio=4.0,
                     memory_mb_total=4096, memory_mb_used=1024,
                     ram_allocation_ratio=1.5,
                     disk_gb_total=100, disk_gb_used=30,
                     disk_allocation_ratio=2.0)
    spec = make_spec()
    assert RAMWeigher(conf).weigh(host, spec) == 4096 - 1024
    assert CPUWeigher(conf).weigh(host, spec) == 32 - 10
    assert DiskWeigher(conf).weigh(host, spec) == 100 - 30


@pytest.mark.parametrize("cls,ratio", [(RAMWeigher, "ram_allocation_ratio"),
                                       (DiskWeigher,
                                        "disk_allocation_ratio")])
def test_ram_and_disk_ratio_does_not_win_the_weighing(conf, cls, ratio):
    """Same hardware, same usage: a higher ratio lets a host pass the
    filter, it does not make it look emptier (it did before nova's
    semantics were followed here)."""
    hosts = [make_host("low", node_id=1, memory_mb_used=4096,
                       disk_gb_used=50, **{ratio: 1.0}),
             make_host("high", node_id=2, memory_mb_used=4096,
                       disk_gb_used=50, **{ratio: 3.0}),
             make_host("emptier", node_id=3, memory_mb_used=2048,
                       disk_gb_used=20)]
    weighed = weigh_hosts([cls(conf)], hosts, make_spec())
    values = {w.host.host: w.weights[cls.__name__] for w in weighed}
    assert values["low"] == values["high"] < values["emptier"]


def test_cpu_ratio_does_win_the_weighing(conf):
    hosts = [make_host("low", node_id=1, vcpus_used=4,
                       cpu_allocation_ratio=1.0),
             make_host("high", node_id=2, vcpus_used=4,
                       cpu_allocation_ratio=4.0)]
    weighed = weigh_hosts([CPUWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["high", "low"]


@pytest.mark.parametrize("cls,option", [
    (RAMWeigher, "ram_weight_multiplier"),
    (CPUWeigher, "cpu_weight_multiplier"),
    (DiskWeigher, "disk_weight_multiplier"),
])
def test_minval_zero_and_multiplier_option(conf, cls, option):
    weigher = cls(conf)
    assert cls.minval == 0 and cls.maxval is None
    assert weigher.multiplier == 1.0
    conf.set_override(option, 7.0, group="filter_scheduler")
    assert weigher.multiplier == 7.0


def test_ram_weigher_spreads(conf):
    hosts = [make_host("small", node_id=1, memory_mb_total=1024),
             make_host("big", node_id=2, memory_mb_total=4096),
             make_host("mid", node_id=3, memory_mb_total=2048)]
    weighed = weigh_hosts([RAMWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["big", "mid", "small"]
    # minval 0: 1024/2048/4096 -> 0.25/0.5/1.0
    assert [w.weight for w in weighed] == [1.0, 0.5, 0.25]


def test_ram_weigher_negative_multiplier_stacks(conf):
    conf.set_override("ram_weight_multiplier", -1.0,
                      group="filter_scheduler")
    hosts = [make_host("emptier", node_id=1, memory_mb_used=1024),
             make_host("fuller", node_id=2, memory_mb_used=6144)]
    weighed = weigh_hosts([RAMWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["fuller", "emptier"]


def test_overcommitted_host_clamps_to_zero(conf):
    hosts = [make_host("over", node_id=1, memory_mb_total=1024,
                       memory_mb_used=4096),
             make_host("ok", node_id=2, memory_mb_total=1024)]
    weighed = weigh_hosts([RAMWeigher(conf)], hosts, make_spec())
    assert {w.host.host: w.weights["RAMWeigher"] for w in weighed} == {
        "over": 0.0, "ok": 1.0}


def test_default_weighers_together(conf):
    hosts = [make_host("ram", node_id=1, memory_mb_total=65536,
                       vcpus_total=4, disk_gb_total=100),
             make_host("all", node_id=2, memory_mb_total=65536,
                       vcpus_total=64, disk_gb_total=1000),
             make_host("none", node_id=3, memory_mb_total=1024,
                       vcpus_total=4, disk_gb_total=100)]
    weighers = [RAMWeigher(conf), CPUWeigher(conf), DiskWeigher(conf)]
    weighed = weigh_hosts(weighers, hosts, make_spec())
    assert _order(weighed) == ["all", "ram", "none"]
    assert set(weighed[0].weights) == {"RAMWeigher", "CPUWeigher",
                                       "DiskWeigher"}
    assert weighed[0].weight == pytest.approx(3.0)


def test_cpu_weigher_zero_multiplier_is_skipped(conf):
    conf.set_override("cpu_weight_multiplier", 0.0,
                      group="filter_scheduler")
    hosts = [make_host("a", node_id=1, vcpus_total=4),
             make_host("b", node_id=2, vcpus_total=64)]
    weighed = weigh_hosts([CPUWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["a", "b"]
    assert weighed[0].weights == {}
