"""The capacity rule in its three shapes (one host, NumPy columns, the
claim's SQL) gives one answer, and the ratio in force is what the planner's
limits say."""
from __future__ import annotations

import random

import numpy as np
import pytest
import sqlalchemy as sa

from scheduler.hosts import capacity
from scheduler.decide.filter import FilterScheduler
from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host

FILTER_SETS = [[], ["RamFilter"], ["AggregateRamFilter"],
               ["RamFilter", "AggregateRamFilter", "CoreFilter",
                "AggregateCoreFilter", "DiskFilter", "AggregateDiskFilter"],
               ["AggregateCoreFilter", "DiskFilter"]]


def _cases(rng: random.Random, n: int):
    for _ in range(n):
        resource = rng.choice(capacity.RESOURCES)
        total = rng.choice([0, 1, 4, 8, 1024, 4096])
        ratio = rng.choice([1.0, 1.5, 0.5, 16.0, 1.1, 2.0 / 3.0])
        used = rng.choice([0, 1, total, int(total * ratio),
                           rng.randint(0, 2 * total + 1)])
        need = rng.choice([0, 1, 2, total, rng.randint(0, 2 * total + 1)])
        yield resource, need, total, used, ratio


@pytest.mark.parametrize("seed", range(5))
def test_host_columns_and_sql_agree(engine, seed):
    rng = random.Random(seed)
    cases = list(_cases(rng, 400))
    with engine.connect() as conn:
        for resource, need, total, used, ratio in cases:
            lim = capacity.limit(total, ratio)
            one = capacity.fits(resource, need, total, used, lim)
            room = capacity.headroom_columns(
                resource, np.array([total], float),
                np.array([used], float), np.array([lim]))[0]
            assert room == capacity.headroom(resource, total, used, lim)
            column = need <= room
            # The claim's SQL, with the planner's limit and with none (the
            # node's own ratio); both must agree on the limit part.
            sql = [conn.execute(sa.select(capacity.within_sql(
                resource, sa.literal(used), sa.literal(need),
                sa.literal(total), sa.literal(ratio), sa.literal(9.0),
                planned))).scalar()
                for planned in (sa.literal(lim), sa.null())]
            unjudged = resource.zero_unjudged and total == 0
            limit_part = unjudged or used + need <= lim
            assert one == (unjudged or (need <= total and limit_part))
            assert one == bool(column), (resource, need, total, used, ratio)
            assert [bool(v) for v in sql] == [limit_part, limit_part], (
                resource, need, total, used, ratio)


@pytest.mark.parametrize("planned, fits", [(8, True), (2, False),
                                            (None, False)])
def test_the_claims_sql_judges_by_the_planners_limit(engine, planned, fits):
    """A node of 4 with 4 used, ratio 1.0 of its own, asked for 2 more:
    under an aggregate ratio of 2.0 the planner's limit is 8 and the claim
    must take it (it refused, as a lost race); under 0.5 it is 2; with no
    limit planned (a forced host) the node's own ratio decides."""
    limit = sa.null() if planned is None else sa.literal(planned)
    with engine.connect() as conn:
        ok = conn.execute(sa.select(capacity.within_sql(
            capacity.MEMORY, sa.literal(4), sa.literal(2), sa.literal(4),
            sa.literal(1.0), sa.literal(1.5), limit))).scalar()
    assert bool(ok) is fits


def test_only_a_node_reporting_no_vcpus_goes_unjudged():
    """nova's CoreFilter passes a node reporting 0 vCPUs whatever the
    request; no other resource, and no node with some, is exempt."""
    assert capacity.unjudged(capacity.VCPU, 0)
    assert not capacity.unjudged(capacity.VCPU, 1)
    assert not capacity.unjudged(capacity.MEMORY, 0)
    assert not capacity.unjudged(capacity.DISK, 0)
    # The exemption is the whole of it: no limit and no physical size.
    assert capacity.fits(capacity.VCPU, 64, 0, 100, 0.0)
    assert capacity.headroom(capacity.VCPU, 0, 100, 0.0) == float("inf")
    assert not capacity.fits(capacity.MEMORY, 1, 0, 0, 0.0)


def test_a_node_without_a_ratio_uses_the_default():
    assert capacity.ratio(None, 1.5) == 1.5
    assert capacity.ratio(0.0, 1.5) == 1.5
    assert capacity.ratio(2.0, 1.5) == 2.0


def test_aggregate_ratio_is_the_smallest_else_the_nodes():
    aggs = (Aggregate(1, "a", {"ram_allocation_ratio": "3.0"}),
            Aggregate(2, "b", {"ram_allocation_ratio": "2.0"}),
            Aggregate(3, "c", {}))
    assert capacity.aggregate_ratio(aggs, capacity.MEMORY, 1.0) == 2.0
    assert capacity.aggregate_ratio(aggs, capacity.VCPU, 4.0) == 4.0
    bad = (Aggregate(1, "a", {"cpu_allocation_ratio": "lots"}),)
    assert capacity.aggregate_ratio(bad, capacity.VCPU, 4.0) == 4.0


@pytest.mark.parametrize("seed", range(10))
def test_ratio_in_force_is_what_the_planner_limits(conf, seed):
    """The claim is handed the planner's limits; the audit uses
    ratio_in_force. They must be one rule."""
    rng = random.Random(seed)
    for filters in FILTER_SETS:
        conf.set_override("enabled_filters", filters, "filter_scheduler")
        driver = FilterScheduler(conf, None, None)
        for _ in range(20):
            meta = {}
            for r in capacity.RESOURCES:
                if rng.random() < 0.6:
                    meta[r.ratio] = rng.choice(["0.5", "2.0", "8", "x"])
            host = make_host(
                vcpus_total=8, memory_mb_total=4096, disk_gb_total=100,
                cpu_allocation_ratio=rng.choice([1.0, 4.0]),
                ram_allocation_ratio=rng.choice([1.0, 1.5]),
                disk_allocation_ratio=rng.choice([1.0, 2.0]),
                aggregates=(Aggregate(1, "a", meta),))
            limits = driver._limits(host, forced=False)
            for r in capacity.RESOURCES:
                in_force = capacity.limit(
                    getattr(host, r.total), capacity.ratio_in_force(
                        r, getattr(host, r.ratio), host.aggregates,
                        filters))
                if r.name in limits:
                    assert limits[r.name] == in_force, (filters, r, meta)
                else:   # no filter: the claim falls back to the node's
                    assert in_force == getattr(host, r.limit)


def test_instances_fit_together_within_the_limit_each_within_the_host():
    total = np.array([8.0, 8.0, 4.0, 0.0])
    used = np.array([0.0, 10.0, 0.0, 5.0])
    limit = total * 2.0
    # 6 + 6 = 12 needs overcommit (fine within 16); a 6 never fits a
    # 4-vCPU host, however much room its ratio leaves; 0 vCPUs: unjudged.
    assert capacity.fit_together_columns(
        capacity.VCPU, [6, 6], total, used, limit).tolist() == [
        True, False, False, True]
    assert capacity.fit_together_columns(
        capacity.MEMORY, [6, 6], total, used, limit).tolist() == [
        True, False, False, False]


def test_default_ratios_set_where_nova_has_them(tmp_path):
    # nova's *_allocation_ratio options are in [DEFAULT]; an operator's
    # nova.conf values carry over, and [filter_scheduler] wins over them.
    import scheduler.conf
    path = tmp_path / "scheduler.conf"
    path.write_text("[DEFAULT]\ncpu_allocation_ratio = 4.0\n"
                    "ram_allocation_ratio = 1.0\ndisk_allocation_ratio = 2.0\n"
                    "[filter_scheduler]\ndisk_allocation_ratio = 3.0\n")
    conf = scheduler.conf.new_conf()
    conf(["--config-file", str(path)], default_config_files=[])
    assert capacity.Ratios.from_conf(conf) == capacity.Ratios(4.0, 1.0, 3.0)
