"""HostTable and HostView: the derived columns (limits, headroom, usable,
free capacity) stay what a table built afresh from the same host states
would hold, after a host is replaced and while a request plans
instances."""
from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.hosts import capacity
from scheduler.hosts.table import FREE
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from tests.unit.fakes import make_host


def _host(rng: random.Random, i: int):
    vcpus = rng.choice([0, 4, 16])
    memory = rng.choice([2048, 16384])
    disk = rng.choice([20, 500])
    return make_host(
        f"host-{i}", node_id=i + 1, generation=rng.randint(0, 9),
        vcpus_total=vcpus, vcpus_used=rng.randint(0, vcpus * 2),
        memory_mb_total=memory, memory_mb_used=rng.randint(0, memory * 2),
        disk_gb_total=disk, disk_gb_used=rng.randint(0, disk),
        cpu_allocation_ratio=rng.choice([1.0, 16.0]),
        ram_allocation_ratio=rng.choice([1.0, 1.5, 1.1]),
        disk_allocation_ratio=rng.choice([1.0, 2.0 / 3.0]),
        service_up=rng.random() > 0.2,
        service_disabled=rng.random() < 0.2)


#: Every column a filter or weigher may read, derived ones included.
COLUMNS = ("vcpus_used", "memory_mb_used", "disk_gb_used", "num_instances",
           "usable", "service_up", "service_disabled") + tuple(
    name for r in capacity.RESOURCES
    for name in (r.total, r.limit, r.headroom)) + FREE


def _assert_same_columns(got, fresh: HostTable) -> None:
    for name in COLUMNS:
        assert np.array_equal(getattr(got, name), getattr(fresh, name)), name


@pytest.mark.parametrize("seed", range(10))
def test_a_replaced_host_leaves_the_columns_of_a_fresh_table(seed):
    rng = random.Random(seed)
    states = [_host(rng, i) for i in range(30)]
    table = HostTable(states)
    for _ in range(20):
        i = rng.randrange(len(states))
        newer = _host(rng, i)
        states[i] = newer
        table.set(i, newer)
    _assert_same_columns(table, HostTable(states))


@pytest.mark.parametrize("seed", range(10))
def test_a_view_plans_on_a_copy_with_the_columns_of_its_states(seed):
    rng = random.Random(100 + seed)
    states = [_host(rng, i) for i in range(30)]
    table = HostTable(states)
    view = HostView(table)
    for _ in range(15):
        view.consume(rng.randrange(len(states)), rng.choice([1, 4]),
                     rng.choice([512, 4096]), rng.choice([1, 20]))
    planned = HostTable(view.state(i) for i in range(len(states)))
    _assert_same_columns(view, planned)
    # The shared table did not move.
    _assert_same_columns(table, HostTable(states))


def _all_columns(table: HostTable) -> dict[str, np.ndarray]:
    return {name: value for name, value in vars(table).items()
            if isinstance(value, np.ndarray)}


@pytest.mark.parametrize("seed", range(10))
def test_releasing_claims_plans_on_a_copy_with_their_usage_given_back(seed):
    rng = random.Random(200 + seed)
    states = [_host(rng, i) for i in range(30)]
    table = HostTable(states)
    before = {k: v.copy() for k, v in _all_columns(table).items()}
    usages = [(rng.randrange(len(states)) + 1, rng.choice([1, 4]),
               rng.choice([512, 4096]), rng.choice([1, 20]))
              for _ in range(12)] + [(999, 1, 1, 1)]      # not in the table
    released = table.releasing(usages)
    expected = list(states)
    for node_id, vcpus, memory_mb, disk_gb in usages[:-1]:
        expected[node_id - 1] = expected[node_id - 1].released(
            vcpus, memory_mb, disk_gb)
    assert released.states == expected
    for name, column in _all_columns(HostTable(expected)).items():
        assert np.array_equal(getattr(released, name), column), name
    # The shared table did not move, in any column.
    assert table.states == states
    for name, column in _all_columns(table).items():
        assert np.array_equal(column, before[name]), name


def test_releasing_nothing_is_the_table_itself():
    table = HostTable([make_host()])
    assert table.releasing([]) is table
    assert table.releasing([(999, 1, 1, 1)]) is table


def test_headroom_is_unbounded_where_a_resource_is_not_judged():
    table = HostTable([make_host(vcpus_total=0, vcpus_used=3),
                       make_host("h2", node_id=2, vcpus_total=4,
                                 vcpus_used=1)])
    assert list(table.vcpus_headroom) == [np.inf, 3.0]
