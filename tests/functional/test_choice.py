"""The workers of one scheduler-server do not race each other for nodes.

Two workers consume one topic and plan on the same SQL state. On a fleet of
equal nodes every placement moves the best hosts, so two workers that pick
by salt alone keep landing on the same node and one of them loses the
claim. Each worker prefers its own share of the best hosts instead
(``scheduler.choice.Share``), so eight callers fill the fleet without a
single lost race — also right after a release, when every best host was
just written by someone else and each worker would otherwise steer clear
of its own share into its sibling's.
"""
from __future__ import annotations

import concurrent.futures
import uuid

from scheduler import races
from tests.functional.conftest import node

HOSTS = 300
CALLERS = 8
PLACEMENTS = 160
FLAVOR = {"memory_mb": 256, "vcpus": 1, "root_gb": 1}


def test_two_workers_of_one_server_never_lose_a_claim_to_each_other(
        make_deployment):
    deployment = make_deployment(
        scheduler__workers=2,
        filter_scheduler__host_subset_size=64,
        filter_scheduler__host_subset_choice="per_process")
    deployment.add_nodes([node(f"equal-{i:03d}", vcpus=64, memory_mb=65536,
                               local_gb=1000) for i in range(HOSTS)])
    deployment.start_server()

    def place(_):
        spec = {"instance_uuids": [str(uuid.uuid4())], "flavor": FLAVOR}
        return deployment.api.select_destinations({}, spec)[0]["uuid"]

    placed = [place(i) for i in range(PLACEMENTS)]
    deployment.api.release({}, placed)
    with concurrent.futures.ThreadPoolExecutor(CALLERS) as pool:
        again = list(pool.map(place, range(PLACEMENTS)))

    assert len(set(placed + again)) == 2 * PLACEMENTS
    assert len(deployment.allocations()) == PLACEMENTS
    lost = [line for line in deployment.server_log().splitlines()
            if races.LINE in line]
    assert lost == []
