"""The column-wise filters and weighers give exactly what the host-by-host
predicates give, on random fleets and requests."""
from __future__ import annotations

import dataclasses
import importlib.metadata
import random

import numpy as np
import pytest

from scheduler.filters.base import BaseFilter
from scheduler.filters.base import run_filters
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.weighers.base import BaseWeigher
from scheduler.weighers.base import weigh
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec
from tests.unit.fakes import zone_aggregate


def _installed(group: str) -> list[type]:
    """Every class installed under the entry point ``group``, by name: the
    list under test is what the service can load, not a hand list."""
    return [ep.load() for ep in sorted(
        importlib.metadata.entry_points(group=group), key=lambda e: e.name)]


ALL_FILTERS = _installed("scheduler.filters")
ALL_WEIGHERS = _installed("scheduler.weighers")
#: Those with a column-wise form, which must agree with the host-by-host one.
FILTERS = [c for c in ALL_FILTERS
           if c.filter_columns is not BaseFilter.filter_columns]
WEIGHERS = [c for c in ALL_WEIGHERS
            if c.weigh_columns is not BaseWeigher.weigh_columns]
POLICIES = ["affinity", "anti-affinity", "soft-affinity",
            "soft-anti-affinity"]
ZONES = ["az1", "az2", "nova"]


def _fleet(rng: random.Random, n: int):
    hosts = []
    for i in range(n):
        vcpus = rng.choice([0, 4, 8, 16])
        memory = rng.choice([2048, 4096, 16384])
        disk = rng.choice([20, 100, 500])
        zones = rng.sample(ZONES[:2], rng.randint(0, 1))
        hosts.append(make_host(
            f"host-{i % (n // 2 or 1)}", f"node-{i}", node_id=i + 1,
            vcpus_total=vcpus, vcpus_used=rng.randint(0, vcpus * 2),
            memory_mb_total=memory, memory_mb_used=rng.randint(0, memory),
            disk_gb_total=disk, disk_gb_used=rng.randint(0, disk),
            cpu_allocation_ratio=rng.choice([1.0, 4.0, 16.0]),
            ram_allocation_ratio=rng.choice([1.0, 1.5]),
            disk_allocation_ratio=rng.choice([1.0, 2.0]),
            service_up=rng.random() > 0.1,
            service_disabled=rng.random() < 0.1,
            num_instances=rng.randint(0, 60), num_io_ops=rng.randint(0, 10),
            failed_builds=rng.choice([0, 0, 0, 3]),
            aggregates=tuple(zone_aggregate(z, k)
                             for k, z in enumerate(zones))))
    return hosts


def _spec(rng: random.Random, hosts):
    group = None
    if rng.random() < 0.5:
        group = {"policies": [rng.choice(POLICIES)],
                 "hosts": [h.host for h in rng.choices(hosts, k=4)],
                 "rules": {"max_server_per_host": rng.randint(1, 2)}}
    # same_host / different_host: some hinted instances on random hosts
    # (the driver's resolution), some on no host this service knows.
    hints, placed = {}, {}
    for name in ("same_host", "different_host"):
        if rng.random() < 0.3:
            uuids = [f"00000000-0000-4000-8000-{rng.randrange(10 ** 12):012d}"
                     for _ in range(rng.randint(0, 4))]
            hints[name] = uuids
            for u in uuids:
                if rng.random() < 0.8:
                    placed[u] = (rng.choice(hosts).host,)
    spec = make_spec(
        scheduler_hints=hints,
        flavor={"memory_mb": rng.choice([512, 2048, 8192]),
                "vcpus": rng.choice([1, 2, 8]),
                "root_gb": rng.choice([1, 20, 200]),
                "swap": rng.choice([0, 512])},
        availability_zone=rng.choice([None, "az1", "az2", "nova"]),
        instance_group=group)
    return dataclasses.replace(spec, hint_hosts=placed)


@pytest.mark.parametrize("seed", range(25))
def test_each_filter_columns_equal_host_passes(conf, seed):
    rng = random.Random(seed)
    hosts = _fleet(rng, 60)
    spec = _spec(rng, hosts)
    view = HostView(HostTable(hosts))
    idx = view.all_positions()
    for cls in FILTERS:
        f = cls(conf)
        expected = [i for i in idx if f.host_passes(hosts[i], spec)]
        passed = f.filter_columns(view, idx, spec)
        if passed is not None:   # None: this request takes the host path
            assert list(passed) == expected, cls


@pytest.mark.parametrize("seed", range(25))
def test_each_weigher_columns_equal_weigh(conf, seed):
    rng = random.Random(seed)
    hosts = _fleet(rng, 60)
    spec = _spec(rng, hosts)
    view = HostView(HostTable(hosts))
    idx = view.all_positions()
    for cls in WEIGHERS:
        w = cls(conf)
        expected = [w.weigh(h, spec) for h in hosts]
        raw = w.weigh_columns(view, idx, spec)
        if raw is not None:     # None: this request takes the host path
            assert list(raw) == expected, cls


def test_entry_points_list_the_built_in_column_plugins():
    # The lists above are not empty by accident (e.g. nothing installed).
    names = {c.__name__ for c in FILTERS} | {c.__name__ for c in WEIGHERS}
    assert {"RamFilter", "CoreFilter", "DiskFilter", "ComputeFilter",
            "AvailabilityZoneFilter", "RAMWeigher", "CPUWeigher"} <= names


def _consume_some(rng: random.Random, view: HostView, hosts, times: int):
    """Plan ``times`` random instances on random hosts of ``view``, as a
    multi-instance request does between its instances."""
    for _ in range(times):
        view.consume(rng.randrange(len(hosts)), rng.choice([1, 2, 8]),
                     rng.choice([512, 2048, 8192]), rng.choice([1, 20]))


@pytest.mark.parametrize("seed", range(25))
def test_every_filter_agrees_after_planned_instances(conf, seed):
    """Both paths of every installed filter (column-wise or not) see the
    usage a multi-instance request planned so far."""
    rng = random.Random(500 + seed)
    hosts = _fleet(rng, 60)
    spec = _spec(rng, hosts)
    view = HostView(HostTable(hosts))
    _consume_some(rng, view, hosts, rng.randint(1, 40))
    idx = view.all_positions()
    for cls in ALL_FILTERS:
        f = cls(conf)
        expected = [i for i in idx if f.host_passes(view.state(i), spec)]
        passed, _ = run_filters([f], view, idx, spec)
        assert list(passed) == expected, cls


@pytest.mark.parametrize("seed", range(25))
def test_every_weigher_agrees_after_planned_instances(conf, seed):
    rng = random.Random(700 + seed)
    hosts = _fleet(rng, 60)
    spec = _spec(rng, hosts)
    view = HostView(HostTable(hosts))
    _consume_some(rng, view, hosts, rng.randint(1, 40))
    idx = view.all_positions()
    for cls in ALL_WEIGHERS:
        w = cls(conf)
        expected = [w.weigh(view.state(i), spec) for i in idx]
        raw = w.weigh_columns(view, idx, spec)
        if raw is not None:
            assert list(raw) == expected, cls


def _reference_ranking(filters, weighers, hosts, spec):
    """Host by host, as nova does: filter_all in order, then weights
    normalized per weigher, summed, and a stable sort best first."""
    for f in filters:
        hosts = [h for h in hosts if f.host_passes(h, spec)]
    totals = [0.0] * len(hosts)
    if len(hosts) >= 2:
        for w in weighers:
            if w.multiplier == 0:
                continue
            raw = [w.weigh(h, spec) for h in hosts]
            lower = min(raw) if w.minval is None else w.minval
            upper = max(raw) if w.maxval is None else w.maxval
            for j, v in enumerate(raw):
                norm = 0.0 if upper <= lower else (
                    (min(max(v, lower), upper) - lower) / (upper - lower))
                totals[j] += w.multiplier * norm
    order = sorted(range(len(hosts)), key=lambda j: -totals[j])
    return [hosts[j].node_id for j in order]


@pytest.mark.parametrize("seed", range(40))
def test_pipeline_ranks_like_the_host_by_host_path(conf, seed):
    rng = random.Random(1000 + seed)
    hosts = _fleet(rng, 200)
    spec = _spec(rng, hosts)
    conf.set_override("num_instances_weight_multiplier", -0.5,
                      "filter_scheduler")
    filters = [cls(conf) for cls in FILTERS]
    weighers = [cls(conf) for cls in WEIGHERS]
    view = HostView(HostTable(hosts))
    idx = view.all_positions()
    idx, _ = run_filters(filters, view, idx, spec)
    weighing = weigh(weighers, view, idx, spec)
    expected = _reference_ranking(filters, weighers, hosts, spec)
    for k in (1, 3, len(idx)):
        best = [hosts[i].node_id for i in idx[weighing.best(k)]]
        assert best == expected[:k]


def test_best_keeps_input_order_among_ties():
    from scheduler.weighers.base import Weighing
    w = Weighing(np.arange(6), np.array([1.0, 2.0, 2.0, 0.5, 2.0, 1.0]), {})
    assert list(w.best(2)) == [1, 2]
    assert list(w.best(4)) == [1, 2, 4, 0]


def test_best_adds_only_hosts_tied_with_the_last_when_asked():
    from scheduler.weighers.base import Weighing
    w = Weighing(np.arange(7),
                 np.array([1.0, 2.0, 2.0, 0.5, 2.0, 1.0, 1.0]), {})
    # The best weight is held by 1, 2 and 4: all three are equally best.
    assert list(w.best(1, ties=8)) == [1, 2, 4]
    assert list(w.best(1, ties=1)) == [1, 2]
    # The 4th best (1.0) is tied with two more; nothing weaker joins.
    assert list(w.best(4, ties=8)) == [1, 2, 4, 0, 5, 6]
    assert list(w.best(7, ties=8)) == [1, 2, 4, 0, 5, 6, 3]


@pytest.mark.parametrize("seed", range(20))
def test_best_with_ties_matches_a_full_sort(seed):
    from scheduler.weighers.base import Weighing
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    total = np.array([rng.choice((0.0, 0.25, 0.5, 1.0)) for _ in range(n)])
    ranked = sorted(range(n), key=lambda i: (-total[i], i))
    w = Weighing(np.arange(n), total, {})
    for k in (1, 2, 5, n):
        for ties in (0, 3, 100):
            kk = min(k, n)
            last = total[ranked[kk - 1]]
            tied_after = [i for i in ranked[kk:] if total[i] == last]
            assert list(w.best(k, ties)) == \
                ranked[:kk] + tied_after[:ties]
