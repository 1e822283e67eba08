"""caching_scheduler: cached host states, its own claims visible, SQL still
the judge."""
from __future__ import annotations

import pytest

from scheduler.claims import consume
from scheduler.hosts.planned import Claim
from scheduler import exception
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import make_spec
from tests.unit.fakes import node
from tests.unit.fakes import node_row

OTHER = "dddddddd-0000-4000-8000-000000000001"


def _spec(memory_mb=4096, **kw):
    return make_spec(flavor={"memory_mb": memory_mb, "vcpus": 1,
                             "root_gb": 10}, **kw)


@pytest.fixture
def sql_reads(caching_driver, monkeypatch):
    """Counts the refreshes from SQL the driver's host manager makes."""
    reads = []
    manager = caching_driver.host_manager
    original = manager.refresh

    def counting(*args, **kwargs):
        reads.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(manager, "refresh", counting)
    return reads


def test_uses_cached_states_until_the_periodic_refresh(
        register, caching_driver, sql_reads):
    register(node("old", memory_mb=8192))
    assert [d["host"] for d in caching_driver.select_destinations(
        _spec())] == ["old"]
    assert len(sql_reads) == 1              # first request fills the cache
    register(node("new", memory_mb=65536))  # more room, not yet seen
    assert [d["host"] for d in caching_driver.select_destinations(
        _spec())] == ["old"]
    assert len(sql_reads) == 1
    caching_driver.run_periodic_tasks()
    assert len(sql_reads) == 2
    assert [d["host"] for d in caching_driver.select_destinations(
        _spec())] == ["new"]
    assert len(sql_reads) == 2


def test_sees_its_own_claims(register, engine, caching_driver, sql_reads):
    register(node("h1", memory_mb=8192), node("h2", memory_mb=4096))
    first = caching_driver.select_destinations(_spec())
    second = caching_driver.select_destinations(_spec())
    third = caching_driver.select_destinations(_spec())
    assert first[0]["host"] == "h1"
    assert sorted(d["host"] for d in first + second + third) == [
        "h1", "h1", "h2"]
    # No claim race against itself: one SQL read, the cache kept the
    # generations its claims produced.
    assert len(sql_reads) == 1
    assert node_row(engine, "h1").generation == 2
    cached = {s.host: s for s in caching_driver.host_manager.cached_table().states}
    assert cached["h1"].memory_mb_used == 8192
    assert cached["h1"].generation == 2
    with pytest.raises(exception.NoValidHost):
        caching_driver.select_destinations(_spec())
    assert len(allocation_rows(engine)) == 3


def test_multi_instance_on_one_node_updates_the_cache_once(
        register, engine, caching_driver, sql_reads):
    register(node("h1", memory_mb=16384))
    caching_driver.select_destinations(_spec(num_instances=2))
    [cached] = caching_driver.host_manager.cached_table().states
    assert (cached.memory_mb_used, cached.num_instances,
            cached.generation) == (8192, 2, 1)
    assert node_row(engine, "h1").generation == 1
    caching_driver.select_destinations(_spec(num_instances=2))
    assert len(sql_reads) == 1


def test_stale_cache_loses_the_race_then_refreshes(
        register, engine, caching_driver, sql_reads):
    register(node("h1", memory_mb=8192))
    caching_driver.run_periodic_tasks()
    # Another scheduler process claims on h1.
    row = node_row(engine, "h1")
    consume.claim(engine, [Claim(OTHER, row.id, row.host, row.generation, 1,
                                 4096, 10)])
    [dest] = caching_driver.select_destinations(_spec())
    assert dest["host"] == "h1"
    assert len(sql_reads) == 2          # the periodic read + the retry
    assert node_row(engine, "h1").memory_mb_used == 8192
    [cached] = caching_driver.host_manager.cached_table().states
    assert cached.memory_mb_used == 8192
    assert cached.generation == node_row(engine, "h1").generation
    # now full, by the cache alone
    with pytest.raises(exception.NoValidHost):
        caching_driver.select_destinations(_spec())
