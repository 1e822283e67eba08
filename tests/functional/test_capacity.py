"""The claim checks what the planner checked, end to end (scheduler-server
over RabbitMQ, on every database): a host that an aggregate's allocation
ratio allows is placed and claimed, never refused as a lost race, and the
audit agrees with both."""
from __future__ import annotations

import pytest

from scheduler import exception
from tests.functional.conftest import every_database
from tests.functional.conftest import node

pytestmark = every_database

FLAVOR = {"memory_mb": 2048, "vcpus": 1, "root_gb": 10}


def test_an_aggregate_ratio_is_planned_claimed_and_audited_alike(
        make_deployment):
    deployment = make_deployment(
        filter_scheduler__enabled_filters="ComputeFilter,AggregateRamFilter")
    deployment.add_nodes([node("h1", memory_mb=4096, vcpus=8,
                               ram_ratio=1.0)])
    deployment.manage("aggregate", "create", "overcommit")
    deployment.manage("aggregate", "add-host", "overcommit", "h1")
    deployment.manage("aggregate", "set-metadata", "overcommit",
                      "ram_allocation_ratio=2.0")
    deployment.start_server()

    # 4 × 2048 MB on a 4096 MB node: room only under the aggregate's 2.0.
    dests = [deployment.api.select_destinations({}, {"flavor": FLAVOR})
             for _ in range(4)]
    assert [d["host"] for [d] in dests] == ["h1"] * 4
    assert {d["limits"]["memory_mb"] for [d] in dests} == {8192.0}
    with pytest.raises(exception.NoValidHost) as caught:
        deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert "AggregateRamFilter removed 1" in caught.value.message
    assert "race" not in caught.value.message

    audit = deployment.manage("allocations", "audit")
    assert "no node is over capacity" in audit.stdout
