"""Claims over their life: confirmed ones stay, unconfirmed ones expire by
the database's clock, and a database restart loses nothing."""
from __future__ import annotations

import time

import pytest

from scheduler import exception
from tests.functional.conftest import DATABASE_SERVERS
from tests.functional.conftest import node

FLAVOR = {"memory_mb": 2048, "vcpus": 1, "root_gb": 10}


def test_unconfirmed_claims_expire_and_confirmed_ones_stay(make_deployment):
    deployment = make_deployment(scheduler__unconfirmed_claim_ttl=2,
                                 scheduler__periodic_task_interval=1)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()

    kept = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    stray = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert deployment.api.confirm({}, [kept[0]["uuid"]]) == 1
    with pytest.raises(exception.NoValidHost):
        deployment.api.select_destinations({}, {"flavor": FLAVOR})

    deadline = time.monotonic() + 20
    while len(deployment.allocations()) > 1:
        assert time.monotonic() < deadline, "stray claim never expired"
        time.sleep(0.5)

    assert [a.consumer_uuid for a in deployment.allocations()] == \
        [kept[0]["uuid"]]
    assert deployment.nodes()["only"].memory_mb_used == 2048
    assert deployment.api.confirm({}, [stray[0]["uuid"]]) == 0
    again = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert again[0]["host"] == "only"


@pytest.mark.parametrize("database_url", ["postgresql", "mysql"],
                         indirect=True)
def test_service_keeps_serving_across_a_database_restart(
        request, make_deployment, database_url):
    """Database servers only: SQLite has no server to restart."""
    server = request.getfixturevalue(
        DATABASE_SERVERS[request.node.callspec.params["database_url"]])
    deployment = make_deployment()
    deployment.fleet(10)
    deployment.start_server()
    first = deployment.api.select_destinations({}, {"flavor": FLAVOR})

    server.restart()
    deployment.heartbeat()

    second = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert {a.consumer_uuid for a in deployment.allocations()} == {
        first[0]["uuid"], second[0]["uuid"]}
    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout
