"""HostState: immutable snapshots, derived free capacity."""
import dataclasses

import pytest

from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host


def test_consumed_returns_a_new_object_and_leaves_the_old_alone():
    host = make_host(vcpus_used=1, memory_mb_used=512, disk_gb_used=10,
                     num_instances=2, num_io_ops=1, generation=7)
    after = host.consumed(2, 1024, 20)
    assert after is not host
    assert (host.vcpus_used, host.memory_mb_used, host.disk_gb_used,
            host.num_instances, host.num_io_ops) == (1, 512, 10, 2, 1)
    assert (after.vcpus_used, after.memory_mb_used, after.disk_gb_used,
            after.num_instances, after.num_io_ops) == (3, 1536, 30, 3, 2)
    # Identity and totals are unchanged; the claim bumps the generation.
    assert after.key == host.key and after.node_id == host.node_id
    assert after.generation == 7
    assert after.memory_mb_total == host.memory_mb_total


def test_consumed_at_a_claims_generation_changes_that_too():
    host = make_host(vcpus_used=1, generation=7)
    after = host.consumed(2, 1024, 20, generation=8)
    assert after == dataclasses.replace(host.consumed(2, 1024, 20),
                                        generation=8)


def test_consumed_twice_accumulates():
    host = make_host().consumed(1, 1000, 10).consumed(1, 1000, 10)
    assert (host.vcpus_used, host.memory_mb_used, host.disk_gb_used,
            host.num_instances) == (2, 2000, 20, 2)


def test_released_gives_back_what_consumed_took_but_the_io():
    host = make_host(vcpus_used=1, memory_mb_used=512, disk_gb_used=10,
                     num_instances=2, num_io_ops=1, generation=7)
    after = host.consumed(2, 1024, 20).released(2, 1024, 20)
    assert dataclasses.replace(after, num_io_ops=1) == host
    assert after.num_io_ops == 2
    assert host.num_instances == 2


def test_host_state_is_frozen():
    host = make_host()
    with pytest.raises(dataclasses.FrozenInstanceError):
        host.memory_mb_used = 1


def test_derived_values_with_ratios():
    host = make_host(vcpus_total=16, vcpus_used=40, cpu_allocation_ratio=4.0,
                     memory_mb_total=8192, memory_mb_used=2048,
                     ram_allocation_ratio=1.5,
                     disk_gb_total=500, disk_gb_used=100,
                     disk_allocation_ratio=1.0)
    assert host.vcpus_limit == 64.0
    assert host.free_vcpus == 24.0
    assert host.memory_mb_limit == 12288.0
    # nova's meaning: physical, no ratio
    assert host.free_ram_mb == 8192.0 - 2048
    assert host.disk_gb_limit == 500.0
    assert host.free_disk_gb == 400.0


def test_free_ram_and_disk_are_physical_as_in_nova():
    host = make_host(memory_mb_total=4096, memory_mb_used=1024,
                     ram_allocation_ratio=3.0, disk_gb_total=100,
                     disk_gb_used=10, disk_allocation_ratio=2.0)
    assert host.free_ram_mb == 3072
    assert host.free_disk_gb == 90
    assert host.memory_mb_limit - host.memory_mb_used == 12288 - 1024


def test_free_values_follow_consumption():
    host = make_host(memory_mb_total=4096, ram_allocation_ratio=2.0)
    assert host.consumed(1, 1024, 1).free_ram_mb == 4096 - 1024
    assert host.free_ram_mb == 4096


def test_free_can_be_negative_when_overcommitted():
    host = make_host(memory_mb_total=1024, memory_mb_used=2048,
                     ram_allocation_ratio=1.0)
    assert host.free_ram_mb == -1024


def test_key_and_zones():
    host = make_host("ironic", "node-1", aggregates=(
        Aggregate(1, "a", {"availability_zone": "az1"}),
        Aggregate(2, "b", {"ssd": "true"}),
        Aggregate(3, "c", {"availability_zone": "az2"})))
    assert host.key == ("ironic", "node-1")
    assert host.availability_zones() == {"az1", "az2"}
    assert make_host().availability_zones() == set()
