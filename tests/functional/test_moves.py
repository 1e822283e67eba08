"""Moving an instance that holds a claim, through our own API: the move
claims the destination and keeps the source until confirmed or reverted;
a move that finds no room changes nothing; a re-send is still a retry;
nova's rebuild check claims nothing. The books balance all along."""
from __future__ import annotations

import json

import pytest

from scheduler import exception
from tests.functional.conftest import every_database
from tests.functional.conftest import node

pytestmark = every_database

SMALL = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}
BIG = {"memory_mb": 3072, "vcpus": 2, "root_gb": 20}


@pytest.fixture
def cloud(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node(h, vcpus=4, memory_mb=4096, local_gb=100)
                          for h in ("m1", "m2")])
    deployment.start_server()
    return deployment


def used(cloud) -> dict[str, int]:
    return {h: n.memory_mb_used for h, n in cloud.nodes().items()}


def audit_is_clean(cloud) -> bool:
    return cloud.manage("allocations", "audit", check=False).returncode == 0


def boot(cloud, flavor=SMALL) -> tuple[str, str]:
    [placed] = cloud.api.select_destinations({}, {"flavor": flavor})
    return placed["uuid"], placed["host"]


def move(cloud, uuid: str, source: str, flavor=SMALL) -> dict:
    [moved] = cloud.api.select_destinations({}, {
        "flavor": flavor, "instance_uuids": [uuid], "ignore_hosts": [source],
        "move": True})
    return moved


def test_a_move_holds_both_sides_until_confirmed(cloud):
    uuid, source = boot(cloud)
    target = move(cloud, uuid, source)["host"]

    assert target != source
    assert used(cloud) == {source: 1024, target: 1024}
    assert audit_is_clean(cloud)
    described = json.loads(cloud.manage("--json", "host", "describe",
                                        source).stdout)
    assert described["nodes"][0]["projects"][0]["moving"] == 1

    assert cloud.api.confirm_move({}, [uuid]) == 1
    assert used(cloud) == {source: 0, target: 1024}
    assert cloud.api.confirm_move({}, [uuid]) == 0
    assert audit_is_clean(cloud)


def test_a_reverted_resize_keeps_the_source_as_it_was(cloud):
    uuid, source = boot(cloud)
    target = move(cloud, uuid, source, flavor=BIG)["host"]
    assert used(cloud) == {source: 1024, target: 3072}

    result = cloud.client("revert-move", uuid, check=True)
    assert result.stdout.strip() == "reverted 1 move(s)"
    assert used(cloud) == {source: 1024, target: 0}
    [claim] = cloud.allocations()
    assert (claim.memory_mb, claim.source_node_id) == (1024, None)
    assert audit_is_clean(cloud)


def test_a_move_with_no_room_elsewhere_leaves_the_source_intact(cloud):
    uuid, source = boot(cloud)
    other = ({"m1", "m2"} - {source}).pop()
    cloud.api.select_destinations({}, {"flavor": BIG,
                                       "force_hosts": [other]})

    with pytest.raises(exception.NoValidHost):
        move(cloud, uuid, source, flavor=BIG)
    assert used(cloud)[source] == 1024
    [mine] = [a for a in cloud.allocations() if a.consumer_uuid == uuid]
    assert mine.source_node_id is None
    assert audit_is_clean(cloud)


def test_a_re_send_is_a_retry_not_a_move(cloud):
    uuid, source = boot(cloud)
    [again] = cloud.api.select_destinations({}, {
        "flavor": SMALL, "instance_uuids": [uuid]})
    assert again["host"] == source
    assert len(cloud.allocations()) == 1
    assert sum(used(cloud).values()) == 1024


def test_a_re_sent_move_gets_the_move_it_made(cloud):
    # The client re-sends a select whose reply timed out: the move it
    # asked for was made, and a full destination must not refuse it again.
    whole = {"memory_mb": 4096, "vcpus": 2, "root_gb": 20}
    uuid, source = boot(cloud)
    first = move(cloud, uuid, source, flavor=whole)
    again = move(cloud, uuid, source, flavor=whole)

    assert again["host"] == first["host"] != source
    assert used(cloud) == {source: 1024, first["host"]: 4096}
    [claim] = cloud.allocations()
    assert claim.source_node_id is not None
    assert audit_is_clean(cloud)


def test_the_rebuild_check_filters_the_current_host_and_claims_nothing(
        cloud):
    uuid, source = boot(cloud)
    [checked] = cloud.api.select_destinations({}, {
        "flavor": SMALL, "instance_uuids": [uuid],
        "scheduler_hints": {"_nova_check_type": ["rebuild"]}})
    assert checked["host"] == source
    assert sum(used(cloud).values()) == 1024
    assert len(cloud.allocations()) == 1
