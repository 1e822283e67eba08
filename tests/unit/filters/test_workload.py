"""NumInstancesFilter, IoOpsFilter and their aggregate variants."""
import pytest

from scheduler.decide import plugins
from scheduler.filters.workload import AggregateIoOpsFilter
from scheduler.filters.workload import AggregateNumInstancesFilter
from scheduler.filters.workload import IoOpsFilter
from scheduler.filters.workload import NumInstancesFilter
from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _aggs(key, *values):
    return tuple(Aggregate(i, f"agg{i}", {key: v})
                 for i, v in enumerate(values, 1))


def _passes(cls, conf, **host):
    return cls(conf).host_passes(make_host(**host), make_spec())


def test_option_defaults(conf):
    assert conf.filter_scheduler.max_instances_per_host == 50
    assert conf.filter_scheduler.max_io_ops_per_host == 8


# --- NumInstancesFilter ------------------------------------------------------

@pytest.mark.parametrize("count,passes", [(0, True), (49, True),
                                          (50, False), (51, False)])
def test_num_instances_default_max(conf, count, passes):
    assert _passes(NumInstancesFilter, conf, num_instances=count) is passes


def test_num_instances_option(conf):
    conf.set_override("max_instances_per_host", 3, group="filter_scheduler")
    assert _passes(NumInstancesFilter, conf, num_instances=2)
    assert not _passes(NumInstancesFilter, conf, num_instances=3)


def test_num_instances_ignores_aggregates(conf):
    aggs = _aggs("max_instances_per_host", "1")
    assert _passes(NumInstancesFilter, conf, num_instances=5,
                   aggregates=aggs)


def test_num_instances_counts_planned_instances(conf):
    conf.set_override("max_instances_per_host", 2, group="filter_scheduler")
    host = make_host(num_instances=1)
    f = NumInstancesFilter(conf)
    assert f.host_passes(host, make_spec())
    assert not f.host_passes(host.consumed(1, 1, 1), make_spec())


def test_num_instances_shape(conf):
    f = NumInstancesFilter(conf)
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == "too many instances (max 50)"


# --- AggregateNumInstancesFilter ---------------------------------------------

def test_agg_num_instances_without_aggregate_uses_the_option(conf):
    conf.set_override("max_instances_per_host", 3, group="filter_scheduler")
    assert _passes(AggregateNumInstancesFilter, conf, num_instances=2)
    assert not _passes(AggregateNumInstancesFilter, conf, num_instances=3)


@pytest.mark.parametrize("count,passes", [(3, True), (4, False)])
def test_agg_num_instances_smallest_aggregate_value(conf, count, passes):
    aggs = _aggs("max_instances_per_host", "10", "4", "6")
    assert _passes(AggregateNumInstancesFilter, conf, num_instances=count,
                   aggregates=aggs) is passes


def test_agg_num_instances_aggregate_may_raise_the_limit(conf):
    aggs = _aggs("max_instances_per_host", "100")
    assert _passes(AggregateNumInstancesFilter, conf, num_instances=99,
                   aggregates=aggs)
    assert not _passes(AggregateNumInstancesFilter, conf, num_instances=100,
                       aggregates=aggs)


@pytest.mark.parametrize("bad", ["lots", "4.5", ""])
def test_agg_num_instances_bad_value_falls_back(conf, bad):
    aggs = _aggs("max_instances_per_host", bad, "2")
    assert _passes(AggregateNumInstancesFilter, conf, num_instances=49,
                   aggregates=aggs)
    assert not _passes(AggregateNumInstancesFilter, conf, num_instances=50,
                       aggregates=aggs)


@pytest.mark.parametrize("cls,key,count", [
    (AggregateNumInstancesFilter, "max_instances_per_host", "num_instances"),
    (AggregateIoOpsFilter, "max_io_ops_per_host", "num_io_ops")])
def test_agg_limit_beyond_float_range_is_a_limit(conf, cls, key, count):
    """A whole number too large for a float is still a number, as in nova
    (``int()`` takes it): a limit no host reaches, not an internal error
    (math.isfinite overflowed on it)."""
    huge = "9" * 400
    assert _passes(cls, conf, aggregates=_aggs(key, huge), **{count: 10**6})
    aggs = _aggs(key, huge, "3")
    assert _passes(cls, conf, aggregates=aggs, **{count: 2})
    assert not _passes(cls, conf, aggregates=aggs, **{count: 3})


def test_agg_num_instances_shape(conf):
    f = AggregateNumInstancesFilter(conf)
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == (
        "too many instances (max 50, or the aggregates' "
        "max_instances_per_host)")


# --- IoOpsFilter -------------------------------------------------------------

@pytest.mark.parametrize("ops,passes", [(0, True), (7, True), (8, False),
                                        (9, False)])
def test_io_ops_default_max(conf, ops, passes):
    assert _passes(IoOpsFilter, conf, num_io_ops=ops) is passes


def test_io_ops_option(conf):
    conf.set_override("max_io_ops_per_host", 0, group="filter_scheduler")
    assert not _passes(IoOpsFilter, conf, num_io_ops=0)
    conf.set_override("max_io_ops_per_host", 1, group="filter_scheduler")
    assert _passes(IoOpsFilter, conf, num_io_ops=0)
    assert not _passes(IoOpsFilter, conf, num_io_ops=1)


def test_io_ops_shape(conf):
    f = IoOpsFilter(conf)
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == \
        "too many concurrent I/O operations (max 8)"


# --- AggregateIoOpsFilter ----------------------------------------------------

def test_agg_io_ops(conf):
    aggs = _aggs("max_io_ops_per_host", "5", "3")
    assert _passes(AggregateIoOpsFilter, conf, num_io_ops=2,
                   aggregates=aggs)
    assert not _passes(AggregateIoOpsFilter, conf, num_io_ops=3,
                       aggregates=aggs)
    assert _passes(AggregateIoOpsFilter, conf, num_io_ops=7)
    assert not _passes(AggregateIoOpsFilter, conf, num_io_ops=8)


def test_agg_io_ops_bad_value_falls_back(conf):
    aggs = _aggs("max_io_ops_per_host", "x")
    assert _passes(AggregateIoOpsFilter, conf, num_io_ops=7,
                   aggregates=aggs)
    assert not _passes(AggregateIoOpsFilter, conf, num_io_ops=8,
                       aggregates=aggs)


def test_agg_io_ops_shape(conf):
    f = AggregateIoOpsFilter(conf)
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == (
        "too many concurrent I/O operations (max 8, or the aggregates' "
        "max_io_ops_per_host)")


def test_filter_all_matches_host_passes(conf):
    hosts = [make_host(f"h{i}", node_id=i, num_instances=i * 20,
                       num_io_ops=i * 3,
                       aggregates=_aggs("max_io_ops_per_host", "4")
                       if i == 1 else ())
             for i in range(4)]
    spec = make_spec()
    for cls in (NumInstancesFilter, AggregateNumInstancesFilter,
                IoOpsFilter, AggregateIoOpsFilter):
        f = cls(conf)
        assert f.filter_all(hosts, spec) == [
            h for h in hosts if f.host_passes(h, spec)]
    assert [h.host for h in AggregateIoOpsFilter(conf).filter_all(
        hosts, spec)] == ["h0", "h1", "h2"]
    assert [h.host for h in NumInstancesFilter(conf).filter_all(
        hosts, spec)] == ["h0", "h1", "h2"]


def test_entry_points():
    assert {"NumInstancesFilter", "AggregateNumInstancesFilter",
            "IoOpsFilter", "AggregateIoOpsFilter"} <= set(
        plugins.names(plugins.FILTER_NS))
