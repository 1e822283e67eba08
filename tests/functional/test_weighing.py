"""Weighing as nova 34 does it, through scheduler-server on every
database: per-aggregate multipliers set by an operator while the server
runs."""
from __future__ import annotations

from tests.functional.conftest import node

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}


def _one(deployment) -> str:
    [dest] = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    return dest["host"]


def test_an_aggregate_multiplier_overrides_the_option_on_its_hosts(
        make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("h1", memory_mb=16384), node("h2",
                          memory_mb=8192), node("h3", memory_mb=4096)])
    deployment.manage("aggregate", "create", "pack")
    deployment.manage("aggregate", "add-host", "pack", "h3")
    deployment.start_server()
    assert _one(deployment) == "h1"     # spreading: the most free RAM

    # nova's per-aggregate multiplier: the running server follows it
    deployment.manage("aggregate", "set-metadata", "pack",
                      "ram_weight_multiplier=10")
    assert _one(deployment) == "h3"
    deployment.manage("aggregate", "set-metadata", "pack",
                      "ram_weight_multiplier=1")
    assert _one(deployment) == "h1"
