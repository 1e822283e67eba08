"""Weighing: normalize per call, multiply, sum, stable sort."""
from __future__ import annotations

import numpy as np
import pytest

from scheduler.hosts.state import Aggregate
from scheduler.hosts.table import FREE
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.weighers.base import BaseWeigher
from scheduler.weighers.base import WeighedHost
from scheduler.weighers.base import Weighing
from scheduler.weighers.base import normalize
from scheduler.weighers.base import weigh
from scheduler.weighers.base import weigh_hosts
from scheduler.weighers.build_failure import BuildFailureWeigher
from scheduler.weighers.metrics import MetricsWeigher
from scheduler.weighers.resources import CPUWeigher
from scheduler.weighers.resources import DiskWeigher
from scheduler.weighers.resources import RAMWeigher
from scheduler.weighers.workload import NumInstancesWeigher
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


class StatWeigher(BaseWeigher):
    """Raw value = host.stats[key]; multiplier given, not from conf."""

    def __init__(self, conf, key="raw", multiplier=1.0, minval=None,
                 maxval=None):
        super().__init__(conf)
        self.key = key
        self._multiplier = multiplier
        self.minval = minval
        self.maxval = maxval
        self.calls = 0

    @property
    def name(self):
        return f"Stat[{self.key}]"

    @property
    def multiplier(self):
        return self._multiplier

    def weigh(self, host, spec):
        self.calls += 1
        return host.stats[self.key]


def _hosts(*values, key="raw"):
    return [make_host(f"h{i}", node_id=i, stats={key: v})
            for i, v in enumerate(values)]


def _order(weighed):
    return [w.host.host for w in weighed]


# --- normalize ---------------------------------------------------------------

def test_normalize_empty():
    assert list(normalize([])) == []


def test_normalize_min_max_of_the_values():
    assert list(normalize([1, 2, 3])) == [0.0, 0.5, 1.0]
    assert list(normalize([30, 10, 20])) == [1.0, 0.0, 0.5]


@pytest.mark.parametrize("values", [[5], [5, 5, 5], [-3, -3], [0.0, 0.0]])
def test_normalize_equal_values_give_zero(values):
    assert list(normalize(values)) == [0.0] * len(values)


def test_normalize_with_minval_zero():
    # nova's documented RAM example
    assert list(normalize([1024, 2048, 4096], minval=0)) == [0.25, 0.5, 1.0]


def test_normalize_minval_clamps_values_below_it():
    assert list(normalize([-1000, 50, 100], minval=0)) == [0.0, 0.5, 1.0]


def test_normalize_maxval_clamps_values_above_it():
    assert list(normalize([0, 50, 500], maxval=100)) == [0.0, 0.5, 1.0]


def test_normalize_equal_or_inverted_bounds_give_zero():
    assert list(normalize([1, 2, 3], minval=5, maxval=5)) == [0.0, 0.0, 0.0]
    assert list(normalize([-5, -1], minval=0)) == [0.0, 0.0]


@pytest.mark.parametrize("bounds", [{}, {"minval": 0}, {"maxval": 2},
                                    {"minval": 0, "maxval": 2}])
def test_normalize_leaves_its_input_alone(bounds):
    # Weighers hand over a host table's own column; normalizing works in
    # place only on a copy of it.
    column = np.array([0.0, 1.0, 3.0])
    normalize(column, **bounds)
    assert list(column) == [0.0, 1.0, 3.0]


def test_normalize_equal_values_with_a_declared_bound():
    assert list(normalize([1024, 1024], minval=0)) == [1.0, 1.0]


# --- weigh_hosts -------------------------------------------------------------

def test_best_first(conf):
    weighed = weigh_hosts([StatWeigher(conf)], _hosts(1, 3, 2), make_spec())
    assert _order(weighed) == ["h1", "h2", "h0"]
    assert [w.weight for w in weighed] == [1.0, 0.5, 0.0]
    assert all(isinstance(w, WeighedHost) for w in weighed)


def test_weights_record_normalized_values_before_the_multiplier(conf):
    weigher = StatWeigher(conf, multiplier=3.0)
    weighed = weigh_hosts([weigher], _hosts(0, 10), make_spec())
    assert weighed[0].weight == 3.0
    assert weighed[0].weights == {"Stat[raw]": 1.0}
    assert weighed[1].weights == {"Stat[raw]": 0.0}


def test_weighers_add_up(conf):
    hosts = [make_host("a", node_id=1, stats={"x": 0, "y": 10}),
             make_host("b", node_id=2, stats={"x": 10, "y": 0}),
             make_host("c", node_id=3, stats={"x": 5, "y": 5})]
    weighers = [StatWeigher(conf, "x", multiplier=1.0),
                StatWeigher(conf, "y", multiplier=2.0)]
    weighed = weigh_hosts(weighers, hosts, make_spec())
    assert {w.host.host: w.weight for w in weighed} == {
        "a": 2.0, "b": 1.0, "c": 1.5}
    assert _order(weighed) == ["a", "c", "b"]



@pytest.mark.parametrize("seed", range(10))
def test_weighing_without_parts_sums_to_the_same_weights(conf, seed):
    # The select path sums in one scratch array; a ranking keeps each
    # weigher's values. Both must rank alike, to the last bit.
    rng = np.random.default_rng(seed)
    hosts = [make_host(f"h{i}", node_id=i + 1, stats={
        "x": int(rng.integers(-5, 50)), "y": int(rng.integers(0, 3))})
        for i in range(40)]
    weighers = [StatWeigher(conf, "x", multiplier=float(m))
                for m in rng.choice([1.0, -0.5, 3.0], size=2)]
    weighers += [StatWeigher(conf, "y", multiplier=1.0),
                 StatWeigher(conf, "x", multiplier=2.0, minval=0, maxval=30)]
    view = HostView(HostTable(hosts))
    idx = view.all_positions()
    summed = weigh(weighers, view, idx, make_spec())
    kept = weigh(weighers, view, idx, make_spec(), parts=True)
    assert summed.parts == {}
    assert list(summed.total) == list(kept.total)
    assert list(summed.best(len(hosts))) == list(kept.best(len(hosts)))


@pytest.mark.parametrize("parts", [False, True])
def test_weighing_leaves_the_tables_columns_alone(conf, parts):
    # The resource weighers hand over the table's own free columns, and
    # the first weigher's values become the total, which the others are
    # added to and a multiplier scales in place.
    conf.set_override("ram_weight_multiplier", -2.5, "filter_scheduler")
    conf.set_override("disk_weight_multiplier", 3.0, "filter_scheduler")
    hosts = [make_host(f"h{i}", node_id=i + 1, memory_mb_used=100 * i,
                       vcpus_used=i % 4, disk_gb_used=i) for i in range(20)]
    table = HostTable(hosts)
    before = {name: getattr(table, name).copy() for name in FREE}
    view = HostView(table)
    weighing = weigh([RAMWeigher(conf), CPUWeigher(conf), DiskWeigher(conf)],
                     view, view.all_positions(), make_spec(), parts=parts)
    for name, column in before.items():
        assert np.array_equal(getattr(table, name), column), name
    assert not any(np.shares_memory(weighing.total, getattr(table, name))
                   for name in FREE)


def test_normalization_is_per_call_never_remembered(conf):
    weigher = StatWeigher(conf)
    spec = make_spec()
    weigh_hosts([weigher], _hosts(0, 1000), spec)
    # A later, narrower call uses its own range, not [0, 1000].
    weighed = weigh_hosts([weigher], _hosts(5, 10), spec)
    assert [w.weight for w in weighed] == [1.0, 0.0]
    weighed = weigh_hosts([weigher], _hosts(5, 10, 2000), spec)
    assert weighed[0].weight == 1.0 and weighed[1].weight == pytest.approx(
        5 / 1995)
    assert weigher.minval is None and weigher.maxval is None


def test_declared_minval_is_not_widened(conf):
    weigher = StatWeigher(conf, minval=0)
    weigh_hosts([weigher], _hosts(-500, 100), make_spec())
    assert weigher.minval == 0
    weighed = weigh_hosts([weigher], _hosts(50, 100), make_spec())
    assert [w.weight for w in weighed] == [1.0, 0.5]


def test_multiplier_zero_skips_the_weigher(conf):
    class Exploding(StatWeigher):
        def weigh(self, host, spec):
            raise AssertionError("a weigher with multiplier 0 must not run")

    hosts = _hosts(1, 2, 3)
    weighed = weigh_hosts([Exploding(conf, multiplier=0.0)], hosts,
                          make_spec())
    assert _order(weighed) == ["h0", "h1", "h2"]
    assert all(w.weight == 0.0 and w.weights == {} for w in weighed)


def test_negative_multiplier_stacks(conf):
    weighed = weigh_hosts([StatWeigher(conf, multiplier=-1.0)],
                          _hosts(10, 30, 20), make_spec())
    assert _order(weighed) == ["h0", "h2", "h1"]
    assert [w.weight for w in weighed] == [0.0, -0.5, -1.0]


@pytest.mark.parametrize("values,expected", [
    ((1, 1, 1, 1), ["h0", "h1", "h2", "h3"]),
    ((2, 1, 2, 1), ["h0", "h2", "h1", "h3"]),
    ((1, 2, 1, 2), ["h1", "h3", "h0", "h2"]),
])
def test_ties_keep_input_order(conf, values, expected):
    weighed = weigh_hosts([StatWeigher(conf)], _hosts(*values), make_spec())
    assert _order(weighed) == expected


def test_ties_keep_input_order_with_reversed_input(conf):
    hosts = list(reversed(_hosts(1, 1, 1)))
    weighed = weigh_hosts([StatWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["h2", "h1", "h0"]


@pytest.mark.parametrize("count", [0, 1])
def test_zero_or_one_host_is_not_weighed(conf, count):
    weigher = StatWeigher(conf)
    weighed = weigh_hosts([weigher], _hosts(*[7] * count), make_spec())
    assert len(weighed) == count
    assert all(w.weight == 0.0 for w in weighed)
    assert weigher.calls == 0


def test_no_weighers_keeps_order(conf):
    hosts = _hosts(3, 1, 2)
    assert [w.host for w in weigh_hosts([], hosts, make_spec())] == hosts


def test_multiplier_comes_from_the_named_option(conf):
    class Ram(BaseWeigher):
        multiplier_option = "ram_weight_multiplier"

        def weigh(self, host, spec):
            return 0

    weigher = Ram(conf)
    assert weigher.name == "Ram"
    assert weigher.multiplier == 1.0
    conf.set_override("ram_weight_multiplier", -2.5,
                      group="filter_scheduler")
    assert weigher.multiplier == -2.5


def test_base_weigher_requires_weigh(conf):
    class Nothing(BaseWeigher):
        multiplier_option = "ram_weight_multiplier"

    with pytest.raises(NotImplementedError):
        Nothing(conf).weigh(make_host(), make_spec())


def test_a_weigher_without_a_multiplier_option_weighs_with_one(conf):
    """nova's BaseWeigher.weight_multiplier is 1.0 unless a weigher reads
    an option: a plugin with no option of its own still weighs (and no
    aggregate key overrides it)."""
    class ByNodeId(BaseWeigher):
        def weigh(self, host, spec):
            return host.node_id

    weigher = ByNodeId(conf)
    assert weigher.multiplier == 1.0 and weigher.aggregate_key is None
    hosts = [make_host("a", node_id=1,
                       aggregates=_in({"ram_weight_multiplier": "-5"})),
             make_host("b", node_id=2)]
    assert [w.host.host for w in weigh_hosts([weigher], hosts,
                                             make_spec())] == ["b", "a"]


# --- per-aggregate multipliers (nova's get_weight_multiplier) ------------------

def _in(*metadata):
    return tuple(Aggregate(i, f"agg{i}", md) for i, md in
                 enumerate(metadata, 1))


def _ram_hosts(aggregates_of_small=()):
    return [make_host("big", node_id=1, memory_mb_total=16384),
            make_host("small", node_id=2, memory_mb_total=4096,
                      aggregates=aggregates_of_small),
            make_host("mid", node_id=3, memory_mb_total=8192)]


def test_aggregate_metadata_overrides_the_multiplier_per_host(conf):
    """nova: a host in an aggregate with ``ram_weight_multiplier`` is
    weighed with it; here that aggregate packs while the rest spread."""
    hosts = _ram_hosts(_in({"ram_weight_multiplier": "10.0"}))
    weighed = weigh_hosts([RAMWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["small", "big", "mid"]
    assert {w.host.host: w.weight for w in weighed} == {
        "big": 1.0, "small": pytest.approx(10 * 4096 / 16384),
        "mid": 0.5}
    # the raw normalized values shown are the same either way
    assert weighed[0].weights == {"RAMWeigher": 0.25}


def test_aggregates_that_disagree_use_the_smallest_multiplier(conf):
    weigher = RAMWeigher(conf)
    hosts = _ram_hosts(_in({"ram_weight_multiplier": "10"},
                           {"ram_weight_multiplier": "-2"}))
    view = HostView(HostTable(hosts))
    assert list(weigher.multipliers(view, view.all_positions())) == [
        1.0, -2.0, 1.0]


def test_a_multiplier_that_is_not_a_number_falls_back_to_the_option(conf):
    hosts = _ram_hosts(_in({"ram_weight_multiplier": "lots"}))
    view = HostView(HostTable(hosts))
    assert list(RAMWeigher(conf).multipliers(
        view, view.all_positions())) == [1.0, 1.0, 1.0]


def test_without_such_metadata_the_multiplier_is_one_number(conf):
    view = HostView(HostTable(_ram_hosts(_in({"ssd": "true"}))))
    assert RAMWeigher(conf).multipliers(view, view.all_positions()) == 1.0


def test_option_zero_still_weighs_the_hosts_of_an_aggregate_that_sets_one(
        conf):
    assert conf.filter_scheduler.num_instances_weight_multiplier == 0.0
    hosts = [make_host("busy", node_id=1, num_instances=9,
                       aggregates=_in({"num_instances_weight_multiplier":
                                       "-1"})),
             make_host("idle", node_id=2, num_instances=0)]
    weighed = weigh_hosts([NumInstancesWeigher(conf)], hosts, make_spec())
    assert {w.host.host: w.weight for w in weighed} == {"busy": -1.0,
                                                       "idle": 0.0}


def test_penalty_and_metrics_weighers_use_novas_keys(conf):
    hosts = [make_host("a", node_id=1, aggregates=_in({
        "build_failure_weight_multiplier": "5",
        "metrics_weight_multiplier": "3"})), make_host("b", node_id=2)]
    view = HostView(HostTable(hosts))
    idx = view.all_positions()
    assert list(BuildFailureWeigher(conf).multipliers(view, idx)) == [
        -5.0, -1000000.0]
    assert list(MetricsWeigher(conf).multipliers(view, idx)) == [3.0, 1.0]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("ties", [0, 2, 8])
def test_best_is_the_stable_sort_head_and_the_equals_of_its_last(seed, k,
                                                                 ties):
    rng = np.random.default_rng(seed)
    total = rng.choice([0.0, 0.5, 1.0, 1.5], size=30)
    # Sorted by weight, best first, ties in input order.
    order = sorted(range(len(total)), key=lambda j: -total[j])
    last = total[order[k - 1]]
    expected = order[:k] + [j for j in order[k:]
                            if total[j] == last][:ties]
    weighing = Weighing(np.arange(len(total)), total, {})
    assert list(weighing.best(k, ties=ties)) == expected


@pytest.mark.parametrize("tied_at", [[9000], [3, 4095, 4096, 8191, 9999],
                                     list(range(0, 10000, 7))])
@pytest.mark.parametrize("k", [1, 2])
def test_best_finds_the_equals_of_the_last_across_a_large_table(tied_at, k):
    total = np.zeros(10000)
    total[tied_at] = 1.0
    expected = tied_at[:k + 32] if k <= len(tied_at) else (
        tied_at + [j for j in range(10000) if j not in tied_at][:k - len(
            tied_at) + 32])
    weighing = Weighing(np.arange(len(total)), total, {})
    assert list(weighing.best(k, ties=32)) == expected
