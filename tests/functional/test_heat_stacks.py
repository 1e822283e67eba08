"""Heat's own stack-create lands on the plan.

Heat's own code (tests/functional/heat_driver.py, in Heat's virtualenv)
writes each example stack into a real Heat database and gives each server
the hints Heat's ``SchedulerHintsMixin`` gives it. Nova's own client then
sends each boot with those hints, batch by batch in Heat's order and
concurrently within a batch, as Heat's convergence engine creates them.
Our server reads the stack from Heat's database (as a read-only user) at
its first boot, places it whole, and each boot gets its server's planned
host."""
from __future__ import annotations

import collections
import json
from pathlib import Path
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.heat.flavors import nova_flavors
from scheduler.stacks import files
from tests.fixtures.heat import stack_files
from tests.functional.conftest import every_database
from tests.functional.conftest import node
from tests.fixtures.nova_client import NovaClient
from tests.functional.test_upgrade_check import upgrade_check
from tests.functional.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
FLAVORS_FILE = ROOT / "etc" / "scheduler" / "flavors.yaml"
FLAVORS = files.load_flavors(FLAVORS_FILE)
THREE_TIER = ROOT / "etc" / "scheduler" / "stacks" / "three-tier-web.yaml"
CELL = "5d0c4a1e-77b2-4f3a-9c1d-0e2f4a6b8c01"
EXCHANGE = f"heat-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def nova(nova_python, rabbitmq, tmp_path_factory):
    """Nova's client, configured as a nova deployment would be."""
    client = NovaClient.configured(nova_python, rabbitmq.transport_url,
                                   EXCHANGE, tmp_path_factory.mktemp("nova"))
    yield client
    client.close()


class Cloud:
    """Our server as nova's scheduler, reading Heat's database
    ``heat_url`` (as a read-only user) and flavors from the flavors file;
    ``hosts`` nodes of 16 vCPUs, 32 GB and 500 GB."""

    def __init__(self, deployment, heat_url: str) -> None:
        self.deployment = deployment
        self.heat_url = heat_url

    def held(self) -> dict[str, str]:
        """consumer uuid -> the host its claim is on."""
        hosts = {n.id: n.host for n in self.deployment.nodes().values()}
        return {a.consumer_uuid: hosts[a.compute_node_id]
                for a in self.deployment.allocations()}

    def taken_over(self) -> dict[str, str]:
        """The stack's consumer uuid -> the instance that took it over."""
        t = models.stack_instances
        with self.deployment.engine.connect() as conn:
            return dict(conn.execute(sa.select(t.c.consumer_uuid,
                                               t.c.instance_uuid)).all())

    def plan(self, stack_id: str) -> dict[tuple[str, int], str]:
        """(resource, index) -> the host its claim is on now, from the
        stack's stored plan and whoever holds each of its claims."""
        t = models.stacks
        with self.deployment.engine.connect() as conn:
            definition = json.loads(conn.execute(
                sa.select(t.c.definition).where(t.c.stack_id == stack_id)
            ).scalar_one())
        holder = self.taken_over()
        held = self.held()
        return {(name, i): held[holder.get(u, u)]
                for name, r in definition["resources"].items() if r["spec"]
                for i, u in enumerate(r["spec"]["instance_uuids"])}

    def server_log(self) -> str:
        return self.deployment.server_log()


@pytest.fixture
def cloud(request, make_deployment, new_heat_database) -> Cloud:
    kind = request.node.callspec.params["database_url"]
    admin_url, read_only_url = new_heat_database(kind)
    deployment = make_deployment(
        DEFAULT__control_exchange=EXCHANGE, scheduler__topic="scheduler",
        nova__cell_uuid=CELL, heat__database_connection=read_only_url,
        heat__flavors_file=str(FLAVORS_FILE), DEFAULT__debug="true")
    yield Cloud(deployment, admin_url)
    deployment.stop_servers()
    log = deployment.server_log()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]


def _key(server: dict, plan: dict) -> tuple[str, int]:
    """The plan's (resource, index) of a server Heat named: its path of
    resource names from the root; a member of a group of servers is the
    group's instance of its index."""
    path = "/".join([*server["path"], server["name"]])
    if (path, 0) in plan:
        return path, 0
    return "/".join(server["path"]), int(server["name"])


class Stack:
    """A stack Heat stored, and what nova's boots of it got."""

    def __init__(self, stored: dict) -> None:
        self.stored = stored
        self.id = stored["stack_id"]
        self.servers = stored["servers"]
        #: Nova's uuid of each server and server group Heat made: the
        #: physical id Heat was given for it.
        self.uuids = {(tuple(r["path"]), r["name"]): r["physical_id"]
                      for r in (*stored["servers"],
                                *stored["server_groups"])}
        self.groups = {(tuple(g["path"]), g["name"]): g
                       for g in stored["server_groups"]}
        #: instance uuid -> the host nova's boot got (or the error).
        self.landed: dict[str, str] = {}
        self.refusals: list[str] = []

    def batches(self) -> list[list[dict]]:
        by_batch = collections.defaultdict(list)
        for server in self.servers:
            by_batch[server["batch"]].append(server)
        return [by_batch[b] for b in sorted(by_batch)]

    def _uuid_of(self, ref: dict) -> str:
        return self.uuids[(tuple(ref["path"]), ref["resource"])]

    def request(self, server: dict) -> dict:
        """nova's boot of ``server``, as its conductor sends it: the hints
        (each a list of strings, as nova's RequestSpec holds them, the
        servers and group Heat named by nova's uuids), the flavor, the
        server group its ``group`` hint names."""
        hints = {}
        for name, value in server["hints"].items():
            if isinstance(value, dict):
                value = self._uuid_of(value)
            hints[name] = value if isinstance(value, list) else [value]
        request = {"flavor": FLAVORS[server["flavor"]],
                   "instance_uuids": [server["physical_id"]],
                   "hints": hints}
        if server["group"] is not None:
            group = self.groups[(tuple(server["group_path"]),
                                 server["group"])]
            members = [u for u in self.landed
                       if self.group_of(u) == group["physical_id"]]
            request["group"] = {
                "uuid": group["physical_id"],
                "policy": group["policies"][0],
                "rules": group.get("rules") or {}, "members": members,
                "hosts": [self.landed[u] for u in members]}
        return request

    def group_of(self, instance: str) -> str | None:
        for server in self.servers:
            if server["physical_id"] == instance and server["group"]:
                return self.groups[(tuple(server["group_path"]),
                                    server["group"])]["physical_id"]
        return None

    def boot(self, nova, batches: list[list[dict]] | None = None) -> None:
        """Boot ``batches`` (all of them by default) in order, each batch's
        servers at once; a refused batch ends the create, as in Heat."""
        for batch in self.batches() if batches is None else batches:
            answers = nova("select_concurrently", requests=[
                self.request(s) for s in batch])["answers"]
            for server, answer in zip(batch, answers):
                if "selections" in answer:
                    [[chosen, *_]] = answer["selections"]
                    self.landed[server["physical_id"]] = \
                        chosen["service_host"]
                else:
                    self.refusals.append(answer.get("message", str(answer)))
            if self.refusals:
                return


def _store(heat, cloud: Cloud, name: str | Path, stack_name: str) -> Stack:
    return Stack(heat.store(cloud.heat_url, stack_name=stack_name,
                            **stack_files(name)))


def _audit_clean(cloud: Cloud) -> None:
    audit = cloud.deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout


def test_the_three_tier_stack_lands_on_its_plan_its_relations_kept(
        nova, heat, cloud):
    stack = _lands_on_its_plan("three-tier-web", nova, heat, cloud)

    host = {s["name"]: stack.landed[s["physical_id"]] for s in stack.servers}
    assert host["app1"] == host["db"]
    assert host["app2"] != host["app1"]
    assert host["web2"] != host["web1"]


def test_a_tier_of_nested_templates_lands_on_its_plan(nova, heat, cloud):
    """A template resource holding a ResourceGroup of another template,
    whose workers keep off the lead server passed down to them."""
    stack = _lands_on_its_plan("nested-tiers", nova, heat, cloud)

    host = {"/".join([*s["path"], s["name"]]): stack.landed[s["physical_id"]]
            for s in stack.servers}
    assert host["tier/members/0/worker"] != host["tier/lead"]
    assert host["tier/members/1/worker"] != host["tier/lead"]


@every_database
def test_a_group_whose_first_boots_race_to_place_it_lands_on_its_plan(
        nova, heat, cloud):
    """Three servers of one batch in one hard group: their boots all
    arrive first, and all race to place the stack."""
    _lands_on_its_plan("anti-affinity-group", nova, heat, cloud)


def _lands_on_its_plan(example: str, nova, heat, cloud) -> Stack:
    """Heat's create of ``example`` on four hosts: its first batch's boots
    place it whole; then every server lands on its planned host."""
    cloud.deployment.add_nodes([node(f"c{i}", vcpus=16, memory_mb=32768,
                                     local_gb=500) for i in range(4)])
    cloud.deployment.start_server()
    stack = _store(heat, cloud, THREE_TIER if example == "three-tier-web"
                   else example, stack_name=example)
    first, *rest = stack.batches()

    # The first servers' boots: the stack is read and placed whole, once.
    stack.boot(nova, [first])
    plan = cloud.plan(stack.id)
    assert len(plan) == len(stack.servers)
    stack.boot(nova, rest)

    assert stack.refusals == []
    for server in stack.servers:
        assert stack.landed[server["physical_id"]] == \
            plan[_key(server, plan)], server["path"] + [server["name"]]
    # Each claim is nova's instance's now: none twice, none left over.
    assert cloud.held() == stack.landed
    assert set(cloud.taken_over().values()) == set(stack.landed)
    _audit_clean(cloud)
    assert f"Heat stack {example} ({stack.id}) placed whole" in \
        cloud.server_log()
    return stack


@every_database
def test_a_stack_that_does_not_fit_refuses_every_boot_and_holds_nothing(
        nova, heat, cloud):
    # Three hosts: the group of three fits, a fourth member would not.
    cloud.deployment.add_nodes([node(f"c{i}", vcpus=16, memory_mb=32768,
                                     local_gb=500) for i in range(3)])
    cloud.deployment.start_server()
    files = stack_files("anti-affinity-group")
    files["environment"] = {"parameters": {"size": 4}}
    stack = Stack(heat.store(cloud.heat_url, stack_name="four", **files))

    stack.boot(nova)

    assert stack.landed == {}
    assert len(stack.refusals) == 4
    for refusal in stack.refusals:
        assert refusal.startswith(
            f"Heat stack four ({stack.id}) does not fit, none of it is "
            f"placed: No valid host for instance 4 of 4 of resource 'nodes' "
            f"of stack {stack.id}; nothing of the stack was claimed"), refusal
    assert cloud.deployment.allocations() == []
    assert cloud.taken_over() == {}


def test_a_template_the_reader_cannot_resolve_is_placed_boot_by_boot(
        nova, heat, cloud, tmp_path):
    cloud.deployment.add_nodes([node(f"c{i}", vcpus=16, memory_mb=32768,
                                     local_gb=500) for i in range(3)])
    cloud.deployment.start_server()
    template = THREE_TIER.read_text().replace(
        "flavor: m1.large", "flavor: m1.huge")
    (tmp_path / "odd.yaml").write_text(template)
    stack = _store(heat, cloud, tmp_path / "odd.yaml", stack_name="odd")
    for server in stack.servers:
        # Nova knows m1.huge (the flavors file does not): 1 vCPU, 1 GB.
        if server["flavor"] == "m1.huge":
            server["flavor"] = "m1.tiny"

    stack.boot(nova)

    assert stack.refusals == []
    assert cloud.held() == stack.landed
    assert cloud.taken_over() == {}
    log = cloud.server_log()
    assert log.count(f"Heat stack {stack.id} is placed boot by boot: its "
                     f"template: resources.db.properties.flavor: unknown "
                     f"flavor 'm1.huge'") == 1


def test_heats_delete_frees_the_stacks_claims(nova, heat, cloud):
    cloud.deployment.add_nodes([node(f"c{i}", vcpus=16, memory_mb=32768,
                                     local_gb=500) for i in range(3)])
    cloud.deployment.start_server()
    stack = _store(heat, cloud, "anti-affinity-group", stack_name="gone")
    stack.boot(nova)
    assert len(cloud.held()) == 3

    # Heat deletes the servers: each compute tells the scheduler.
    for instance, host in stack.landed.items():
        nova("delete_instance_info", host=host, uuid=instance)
    heat.delete(cloud.heat_url, stack.id)

    wait_until(lambda: cloud.deployment.allocations() == [],
               "the deleted servers' claims released")
    _audit_clean(cloud)


def test_the_upgrade_check_reads_heats_database(heat, cloud,
                                                make_deployment, tmp_path):
    _store(heat, cloud, "anti-affinity-group", stack_name="one")
    code, checks = upgrade_check(cloud.deployment)
    assert checks["Heat database"] == {
        "check": "Heat database", "result": 0,
        "details": "Heat's database answers: 1 root stack(s)"}

    # Any other database: our own, say.
    ours = cloud.deployment.conf.database.connection
    code, checks = upgrade_check(make_deployment(
        heat__database_connection=ours,
        heat__flavors_file=str(FLAVORS_FILE)))
    assert code == 2
    assert checks["Heat database"]["details"].startswith(
        f"[heat] database_connection: {ours}: Heat's tables cannot be "
        f"read (OperationalError: no such table: raw_template"), checks


def test_flavors_are_read_from_novas_api_database(nova_cloud):
    nova_cloud.add_flavor("m1.heat", memory_mb=3072, vcpus=3, root_gb=30,
                          ephemeral_gb=5, swap=1024, flavorid="h1",
                          extra_specs={"hw:cpu_policy": "dedicated"})
    engine = sa.create_engine(nova_cloud.api_url)
    try:
        with engine.connect() as conn:
            flavors = nova_flavors(conn)
    finally:
        engine.dispose()

    assert flavors["m1.heat"] == {
        "name": "m1.heat", "flavorid": "h1", "memory_mb": 3072, "vcpus": 3,
        "root_gb": 30, "ephemeral_gb": 5, "swap": 1024,
        "extra_specs": {"hw:cpu_policy": "dedicated"}}


def test_with_novas_databases_the_stack_is_sized_by_novas_flavors(
        nova, heat, nova_cloud, make_deployment, new_heat_database):
    """Hosts and flavors from nova's databases, not ours nor a file."""
    for i in range(3):
        nova_cloud.add_compute("cell1", f"n{i}", vcpus=16, memory_mb=32768,
                               local_gb=500, free_ram_mb=32768,
                               free_disk_gb=500)
    nova_cloud.add_flavor("m1.small", flavorid="2", **{
        k: FLAVORS["m1.small"][k] for k in ("memory_mb", "vcpus",
                                            "root_gb")})
    admin_url, read_only_url = new_heat_database("sqlite")
    deployment = make_deployment(
        DEFAULT__control_exchange=EXCHANGE, scheduler__topic="scheduler",
        nova__api_database_connection=nova_cloud.api_url,
        nova__sync_interval=0.2, heat__database_connection=read_only_url)
    deployment.start_server()
    cloud = Cloud(deployment, admin_url)
    stack = _store(heat, cloud, "anti-affinity-group", stack_name="spread")

    stack.boot(nova)

    assert stack.refusals == []
    assert sorted(stack.landed.values()) == ["n0", "n1", "n2"]
    assert cloud.held() == stack.landed
    assert set(cloud.taken_over().values()) == set(stack.landed)
    deployment.stop_servers()
    log = deployment.server_log()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]
