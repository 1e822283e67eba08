"""The chance and caching drivers, end to end."""
from __future__ import annotations

import time

import pytest

from scheduler import exception
from scheduler.db import models
from tests.functional.conftest import every_database
from tests.functional.conftest import node

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}


def test_chance_driver_places_only_where_the_flavor_fits(make_deployment):
    deployment = make_deployment(scheduler__driver="chance_scheduler")
    deployment.add_nodes([node("tiny", memory_mb=512),
                          node("roomy-1", memory_mb=8192, vcpus=8),
                          node("roomy-2", memory_mb=8192, vcpus=8)])
    deployment.start_server()

    result = deployment.api.select_destinations(
        {}, {"num_instances": 6, "flavor": FLAVOR,
             "ignore_hosts": ["roomy-2"]})

    assert {d["host"] for d in result} == {"roomy-1"}
    assert all(d["nodename"] == "roomy-1" for d in result)
    assert deployment.nodes()["roomy-1"].memory_mb_used == 6 * 1024


def test_chance_driver_refuses_what_does_not_fit(make_deployment):
    deployment = make_deployment(scheduler__driver="chance_scheduler")
    deployment.add_nodes([node("tiny", memory_mb=512),
                          node("roomy", memory_mb=8192, vcpus=8)])
    deployment.start_server()

    with pytest.raises(exception.NoValidHost) as caught:
        deployment.api.select_destinations(
            {}, {"num_instances": 9, "flavor": FLAVOR})
    assert "RamFilter" in caught.value.message
    assert deployment.allocations() == []

    result = deployment.api.select_destinations(
        {}, {"num_instances": 8, "flavor": FLAVOR})
    assert {d["host"] for d in result} == {"roomy"}


def test_caching_driver_sees_its_own_claims_and_refreshes(make_deployment):
    deployment = make_deployment(scheduler__driver="caching_scheduler",
                                 scheduler__periodic_task_interval=1)
    deployment.add_nodes([node("one", memory_mb=2048, vcpus=2)])
    deployment.start_server()

    deployment.api.select_destinations({}, {"num_instances": 2,
                                            "flavor": FLAVOR})
    # The cache knows "one" is full without re-reading SQL.
    with pytest.raises(exception.NoValidHost):
        deployment.api.select_destinations({}, {"flavor": FLAVOR})

    # A node added behind its back shows up after a periodic refresh.
    deployment.add_nodes([node("two", memory_mb=2048, vcpus=2)])
    deadline = time.monotonic() + 20
    while True:
        try:
            result = deployment.api.select_destinations({}, {"flavor":
                                                             FLAVOR})
            break
        except exception.NoValidHost:
            assert time.monotonic() < deadline, "cache never refreshed"
            time.sleep(0.5)
    assert result[0]["host"] == "two"


@every_database
def test_caching_driver_stale_cache_never_double_books(make_deployment):
    """Capacity taken by someone else (another scheduler) after the cache was
    filled: the claim's generation check catches it."""
    deployment = make_deployment(scheduler__driver="caching_scheduler",
                                 scheduler__periodic_task_interval=3600)
    deployment.add_nodes([node("one", memory_mb=2048, vcpus=2)])
    deployment.start_server()
    deployment.api.select_destinations({}, {"flavor": FLAVOR})   # fills cache

    nodes = models.compute_nodes
    with deployment.engine.begin() as conn:   # another writer fills "one"
        conn.execute(nodes.update().values(
            memory_mb_used=2048, vcpus_used=2,
            generation=nodes.c.generation + 1))

    with pytest.raises(exception.NoValidHost):
        deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert len(deployment.allocations()) == 1
