"""Boots whose Heat hints name a stack placed beforehand (``select_stack``
under the root stack's id) land on the stack's plan: each takes over its
server's claim, once, and the stack's release frees what they hold.

Heat's own database and Heat's own hints are in test_heat_stacks.py; here
the stack is placed over our 1.x API, as ``scheduler-client stack place
--stack-id`` does, and the boots carry hints shaped as Heat's."""
from __future__ import annotations

import uuid

import sqlalchemy as sa

from scheduler.db import clock
from scheduler.db import models
from tests.functional.conftest import every_database
from tests.functional.conftest import node

ROOT = "3f1e5c2a-9b7d-4e11-8a6c-2d4b6f8e0a11"
FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}
GROUP = "b1c2d3e4-0000-4000-8000-00000000000a"


def _stack() -> dict:
    """db and app apart; three workers of one group, kept apart too."""
    return {"stack_id": ROOT, "resources": {
        "db": {"spec": {"flavor": FLAVOR}},
        "app": {"spec": {"flavor": FLAVOR}, "different_host": ["db"]},
        "workers": {"spec": {"flavor": FLAVOR, "num_instances": 3,
                             "instance_group": {
                                 "uuid": str(uuid.uuid5(
                                     uuid.NAMESPACE_URL, "g")),
                                 "policies": ["anti-affinity"]}}}}}


def _boot(deployment, path: list[str], name: str, instance: str,
          flavor: dict = FLAVOR, **spec) -> list[dict]:
    hints = {"heat_root_stack_id": [ROOT], "heat_stack_id": [ROOT],
             "heat_stack_name": ["web"], "heat_path_in_stack": path,
             "heat_resource_name": [name],
             "heat_resource_uuid": [str(uuid.uuid4())]}
    return deployment.api.select_destinations({}, {
        "flavor": flavor, "instance_uuids": [instance],
        "scheduler_hints": hints, **spec})


def with_stack(make_deployment):
    """A server on four hosts, the stack of :func:`_stack` placed."""
    deployment = make_deployment()
    deployment.add_nodes([node(f"h{i}") for i in range(4)])
    deployment.start_server()
    deployment.api.select_stack({}, _stack())
    return deployment


def _planned(placed: dict) -> dict[str, list[str]]:
    return {name: [d["host"] for d in dests]
            for name, dests in placed["resources"].items()}


def _audit_clean(deployment) -> None:
    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout


@every_database
def test_each_boot_takes_over_its_servers_claim_on_the_planned_host(
        make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node(f"h{i}") for i in range(4)])
    deployment.start_server()
    planned = _planned(deployment.api.select_stack({}, _stack()))
    instances = {key: str(uuid.uuid4()) for key in
                 ("db", "app", "w0", "w1", "w2")}

    landed = {
        "db": _boot(deployment, ["web"], "db", instances["db"]),
        "app": _boot(deployment, ["web"], "app", instances["app"]),
        **{f"w{i}": _boot(deployment,
                          ["web", "workers,web-workers-x7"], str(i),
                          instances[f"w{i}"],
                          instance_group={"uuid": GROUP,
                                          "policies": ["anti-affinity"]})
           for i in range(3)}}

    assert {k: d[0]["host"] for k, d in landed.items()} == {
        "db": planned["db"][0], "app": planned["app"][0],
        "w0": planned["workers"][0], "w1": planned["workers"][1],
        "w2": planned["workers"][2]}
    # Five claims, each now the instance's: nothing claimed twice.
    held = {a.consumer_uuid: a for a in deployment.allocations()}
    assert set(held) == set(instances.values())
    assert {held[instances[f"w{i}"]].group_uuid for i in range(3)} == {GROUP}
    _audit_clean(deployment)
    # A re-sent boot gets what its instance holds.
    again = _boot(deployment, ["web"], "db", instances["db"])
    assert again[0]["host"] == planned["db"][0]
    # A re-sent stack answers from what its instances hold.
    assert _planned(deployment.api.select_stack({}, _stack())) == planned
    assert len(deployment.allocations()) == 5

    assert deployment.api.release_stack({}, ROOT) == 5
    assert deployment.allocations() == []


@every_database
def test_a_second_instance_of_one_server_is_placed_by_itself(
        make_deployment):
    """Heat replaced a server that failed to build: the plan's claim is
    the first instance's; the new one gets a claim of its own."""
    deployment = with_stack(make_deployment)
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    _boot(deployment, ["web"], "db", first)

    _boot(deployment, ["web"], "db", second)

    held = {a.consumer_uuid for a in deployment.allocations()}
    assert {first, second} <= held and len(held) == 6
    _audit_clean(deployment)


def test_a_boot_of_a_server_the_plan_lacks_is_placed_by_itself(
        make_deployment):
    deployment = with_stack(make_deployment)
    instance = str(uuid.uuid4())

    [placed] = _boot(deployment, ["web"], "cache", instance)

    assert placed["uuid"] == instance
    assert len(deployment.allocations()) == 6
    # The stack's own servers still land on its plan.
    _boot(deployment, ["web"], "db", str(uuid.uuid4()))
    assert len(deployment.allocations()) == 6
    deployment.stop_servers()
    assert "Heat stack %s is placed boot by boot: its plan has no server " \
        "'cache'" % ROOT in deployment.server_log()


def test_a_boot_asking_other_sizes_than_the_plan_is_placed_by_itself(
        make_deployment):
    deployment = with_stack(make_deployment)
    instance = str(uuid.uuid4())

    _boot(deployment, ["web"], "db", instance,
          flavor={**FLAVOR, "memory_mb": 2048})

    held = {a.consumer_uuid: a.memory_mb for a in deployment.allocations()}
    assert held[instance] == 2048 and len(held) == 6
    deployment.stop_servers()
    assert "asks for 1 vCPUs, 2048 MB, 10 GB where the plan claimed 1, " \
        "1024, 10" in deployment.server_log()


def test_a_boot_naming_no_placed_stack_is_placed_as_any(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("h0")])
    deployment.start_server()

    [placed] = _boot(deployment, ["web"], "db", str(uuid.uuid4()))

    assert placed["host"] == "h0"
    assert len(deployment.allocations()) == 1


def test_each_boot_on_the_plan_gives_the_plans_other_claims_the_ttl_again(
        make_deployment):
    """Heat boots a stack batch after batch, each once the one before is
    built: the claims still waiting must not run out meanwhile."""
    deployment = with_stack(make_deployment)
    allocs = models.allocations
    with deployment.engine.begin() as conn:
        # As if the stack was placed almost a TTL ago.
        conn.execute(allocs.update().values(
            expires_at=clock.utcnow_plus(
                sa.bindparam("b_ttl", 60, type_=sa.Integer))))

    _boot(deployment, ["web"], "db", str(uuid.uuid4()))

    with deployment.engine.connect() as conn:
        now = conn.execute(sa.select(clock.utcnow())).scalar()
        left = [(a.expires_at - now).total_seconds()
                for a in conn.execute(sa.select(allocs))]
    ttl = deployment.conf.scheduler.unconfirmed_claim_ttl
    assert len(left) == 5 and all(s > ttl - 600 for s in left), left
