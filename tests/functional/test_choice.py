"""The workers of one scheduler-server, and the servers on one topic, do
not race each other for nodes.

Two workers consume one topic and plan on the same SQL state. On a fleet of
equal nodes every placement moves the best hosts, so two workers that pick
by salt alone keep landing on the same node and one of them loses the
claim. Each worker prefers its own share of the best hosts instead
(``scheduler.decide.choice.Share``), so eight callers fill the fleet without a
single lost race — also right after a release, when every best host was
just written by someone else and each worker would otherwise steer clear
of its own share into its sibling's. Servers find each other in the
``services`` table (``scheduler.service.peers``) and divide the best hosts the same
way. With ``host_subset_size`` 1 (set: unset, a process with siblings
takes 64) the shares still apply among the hosts of exactly the best
weight.
"""
from __future__ import annotations

import concurrent.futures
import json
import time
import uuid

from scheduler.decide import races
from tests.functional.conftest import every_database
from tests.functional.conftest import node

HOSTS = 300
CALLERS = 8
PLACEMENTS = 160
FLAVOR = {"memory_mb": 256, "vcpus": 1, "root_gb": 1}


def place_twice(deployment) -> list[str]:
    """Place PLACEMENTS instances one by one, release them all, then place
    PLACEMENTS more from CALLERS threads at once; the lost races logged."""
    def place(_):
        spec = {"instance_uuids": [str(uuid.uuid4())], "flavor": FLAVOR}
        return deployment.api.select_destinations({}, spec)[0]["uuid"]

    placed = [place(i) for i in range(PLACEMENTS)]
    deployment.api.release({}, placed)
    with concurrent.futures.ThreadPoolExecutor(CALLERS) as pool:
        again = list(pool.map(place, range(PLACEMENTS)))

    assert len(set(placed + again)) == 2 * PLACEMENTS
    assert len(deployment.allocations()) == PLACEMENTS
    return [line for i in range(len(deployment.servers))
            for line in deployment.server_log(i).splitlines()
            if races.LINE in line]


def equal_fleet(deployment) -> None:
    deployment.add_nodes([node(f"equal-{i:03d}", vcpus=64, memory_mb=65536,
                               local_gb=1000) for i in range(HOSTS)])


@every_database
def test_two_workers_of_one_server_never_lose_a_claim_to_each_other(
        make_deployment):
    deployment = make_deployment(
        scheduler__workers=2,
        filter_scheduler__host_subset_size=64,
        filter_scheduler__host_subset_choice="per_process")
    equal_fleet(deployment)
    deployment.start_server()

    assert place_twice(deployment) == []


def test_two_workers_at_subset_size_one_take_different_equal_hosts(
        make_deployment):
    # host_subset_size 1: each request wants "the" best host, but on equal
    # nodes many are equally best, and each worker takes one of its own.
    deployment = make_deployment(scheduler__workers=2,
                                 filter_scheduler__host_subset_size=1)
    equal_fleet(deployment)
    deployment.start_server()

    assert place_twice(deployment) == []


@every_database
def test_two_servers_on_one_topic_never_lose_a_claim_to_each_other(
        make_deployment):
    deployment = make_deployment(
        report_interval=1,
        filter_scheduler__host_subset_size=64,
        filter_scheduler__host_subset_choice="per_process")
    equal_fleet(deployment)
    deployment.start_server(name="sched-a")
    deployment.start_server(name="sched-b")
    # Each finds the other at its next heartbeat.
    deadline = time.monotonic() + 30
    while not all("Scheduler server %d of 2 up" % (i + 1)
                  in deployment.server_log(i) for i in range(2)):
        assert time.monotonic() < deadline, \
            deployment.server_log(0) + deployment.server_log(1)
        time.sleep(0.2)
    services = json.loads(deployment.manage("service", "list",
                                            "--json").stdout)
    assert sorted((s["host"], s["state"]) for s in services
                  if s["binary"] == "scheduler-server") == \
        [("sched-a", "up"), ("sched-b", "up")]

    assert place_twice(deployment) == []
