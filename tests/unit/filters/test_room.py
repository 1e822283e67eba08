"""Every filter's ``room`` agrees with planning instances one by one: a
host takes exactly as many more as the filter lets through before it
refuses the host."""
import dataclasses
import random

import numpy as np
import pytest

from scheduler.filters.aggregate_resources import AggregateCoreFilter
from scheduler.filters.aggregate_resources import AggregateRamFilter
from scheduler.filters.resources import CoreFilter
from scheduler.filters.resources import DiskFilter
from scheduler.filters.resources import RamFilter
from scheduler.filters.server_group import ServerGroupAntiAffinityFilter
from scheduler.filters.server_group import ServerGroupAffinityFilter
from scheduler.filters.workload import AggregateNumInstancesFilter
from scheduler.filters.workload import IoOpsFilter
from scheduler.filters.workload import NumInstancesFilter
from scheduler.hosts.state import Aggregate
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec

GROUP = "33333333-3333-4333-8333-333333333333"


def _hosts(seed: int = 7) -> list:
    rng = random.Random(seed)
    hosts = []
    for i in range(40):
        vcpus, memory, disk = (rng.choice([0, 4, 16]),
                               rng.choice([2048, 8192, 30000]),
                               rng.choice([40, 100, 1000]))
        hosts.append(make_host(
            f"h{i}", node_id=i + 1, vcpus_total=vcpus,
            vcpus_used=rng.randint(0, vcpus * 2),
            memory_mb_total=memory, memory_mb_used=rng.randint(0, memory),
            disk_gb_total=disk, disk_gb_used=rng.randint(0, disk),
            cpu_allocation_ratio=rng.choice([1.0, 4.0, 16.0]),
            ram_allocation_ratio=rng.choice([1.0, 1.5]),
            num_instances=rng.randint(0, 12), num_io_ops=rng.randint(0, 9),
            aggregates=(Aggregate(1, "a", {
                "ram_allocation_ratio": "1.2", "cpu_allocation_ratio": "2",
                "max_instances_per_host": str(rng.randint(1, 15))}),)
            if i % 3 == 0 else ()))
    return hosts


def _one_by_one(f, view: HostView, i: int, spec) -> int:
    """How many instances of ``spec`` host ``i`` takes, planned one after
    the other while the filter passes it."""
    taken = 0
    while f.host_passes(view.state(i), spec) and taken < 500:
        view.consume(i, spec.flavor.vcpus, spec.flavor.memory_mb,
                     spec.flavor.disk_gb)
        group = spec.instance_group
        if group is not None:
            spec = dataclasses.replace(spec, instance_group=dataclasses.replace(
                group, hosts=group.hosts + (view.state(i).host,)))
        taken += 1
    return taken


@pytest.mark.parametrize("cls", [
    RamFilter, CoreFilter, DiskFilter, AggregateRamFilter,
    AggregateCoreFilter, NumInstancesFilter, AggregateNumInstancesFilter,
    IoOpsFilter, ServerGroupAntiAffinityFilter])
def test_room_is_what_one_by_one_planning_lets_through(conf, cls):
    conf.set_override("max_io_ops_per_host", 8, "filter_scheduler")
    table = HostTable(_hosts())
    spec = make_spec(flavor={"vcpus": 3, "memory_mb": 1500, "root_gb": 30,
                             "ephemeral_gb": 0, "swap": 0},
                     instance_group={"uuid": GROUP,
                                     "policies": ["anti-affinity"],
                                     "hosts": ["h1", "h2", "h2"],
                                     "rules": {"max_server_per_host": 2}})
    f = cls(conf)
    idx = np.array([i for i in range(len(table))
                    if f.host_passes(table.states[i], spec)])
    room = f.room(HostView(table), idx, spec)
    expected = [_one_by_one(f, HostView(table), int(i), spec) for i in idx]
    # A host not judged on a resource (0 vCPUs) takes any number.
    assert [min(r, 500) for r in room.tolist()] == expected
    assert len(idx) and any(expected), "the fleet exercises the rule"


def test_a_filter_not_judging_usage_has_no_room_to_say(conf):
    table = HostTable(_hosts())
    assert ServerGroupAffinityFilter(conf).room(
        HostView(table), table.all_positions(), make_spec()) is None
