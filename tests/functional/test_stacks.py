"""Whole stacks through ``scheduler-client stack`` against a real server:
the example templates placed with their relations and groups, refusals
that leave nothing behind, cycles named, re-sends answered from what the
stack holds."""
from __future__ import annotations

import json
from pathlib import Path


from scheduler import exception
from scheduler.db import models
from tests.functional.conftest import every_database
from tests.functional.conftest import node

EXAMPLES = Path(__file__).resolve().parents[2] / "etc" / "scheduler" / \
    "stacks"
THREE_TIER = str(EXAMPLES / "three-tier-web.yaml")
DB_CLUSTER = str(EXAMPLES / "db-cluster.yaml")


def _fleet(deployment, hosts: int = 6) -> None:
    # Room for m1.large + m1.medium (db and app1 share a host) on each.
    deployment.add_nodes([node(f"host-{i:02d}", vcpus=16, memory_mb=32768,
                               local_gb=500) for i in range(hosts)])


def _place(deployment, *args: str) -> dict:
    result = deployment.client("--json", "stack", "place", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _hosts(result: dict) -> dict[str, list[str]]:
    return {name: [d["host"] for d in dests]
            for name, dests in result["resources"].items()}


def _audit_clean(deployment) -> None:
    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout
    assert "usage equals allocations on every node" in audit.stdout


@every_database
def test_the_three_tier_example_is_placed_with_its_relations(
        make_deployment):
    deployment = make_deployment()
    _fleet(deployment)
    deployment.start_server()

    table = deployment.client("stack", "place", THREE_TIER)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1:7] == ["order:", "  1. net", "  2. subnet", "  3. db",
                          "  4. app1", "  5. app2"]
    assert lines[7] == "  6. web1"
    assert lines[8:10] == ["  7. web2", "  8. lb"]

    result = _place(deployment, THREE_TIER)      # a re-send: the same
    hosts = _hosts(result)
    assert set(hosts) == {"db", "app1", "app2", "web1", "web2"}
    assert hosts["app1"] == hosts["db"]
    assert hosts["app2"] != hosts["app1"]
    assert hosts["web2"] != hosts["web1"]
    placed = {d["uuid"]: d["host"]
              for dests in result["resources"].values() for d in dests}
    allocations = deployment.allocations()
    assert len(allocations) == 5
    nodes = {r.id: r.host for r in deployment.nodes().values()}
    assert {a.consumer_uuid: nodes[a.compute_node_id]
            for a in allocations} == placed
    # The table printed the same hosts.
    for uuid, host in placed.items():
        assert any(uuid in line and host in line for line in lines)
    _audit_clean(deployment)

    released = deployment.client("stack", "release", THREE_TIER)
    assert released.stdout.strip() == "released 5"
    assert deployment.allocations() == []


def test_the_db_cluster_example_keeps_its_nodes_apart(make_deployment,
                                                      tmp_path):
    deployment = make_deployment()
    _fleet(deployment, hosts=3)
    deployment.start_server()

    result = _place(deployment, DB_CLUSTER)
    hosts = _hosts(result)
    assert result["order"] == [["db_group"], ["db1", "db2", "db3"],
                               ["arbiter"]]
    assert sorted(hosts["db1"] + hosts["db2"] + hosts["db3"]) == [
        "host-00", "host-01", "host-02"]
    groups = {a.group_uuid for a in deployment.allocations()
              if a.group_uuid}
    assert len(groups) == 1

    # A second cluster of 24 GB nodes: two hosts have 24 GB left, the
    # arbiter's host 512 MB less. Refused as a whole, nothing of it left.
    flavors = tmp_path / "flavors.yaml"
    flavors.write_text(
        "m1.tiny: {memory_mb: 512, vcpus: 1, root_gb: 1}\n"
        "big: {memory_mb: 24576, vcpus: 4, root_gb: 80}\n")
    refused = deployment.client("stack", "place", DB_CLUSTER,
                                "--name", "second-cluster",
                                "--flavors", str(flavors), "-P", "flavor=big")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "ERROR: No valid host for resource 'db"), refused.stderr
    assert "RamFilter removed" in refused.stderr
    assert len(deployment.allocations()) == 4
    _audit_clean(deployment)


@every_database
def test_a_refused_stack_leaves_nothing_behind(make_deployment, tmp_path):
    deployment = make_deployment()
    _fleet(deployment, hosts=4)
    deployment.start_server()
    before = {h: (n.memory_mb_used, n.vcpus_used)
              for h, n in deployment.nodes().items()}
    template = tmp_path / "too-big.yaml"
    template.write_text(
        (EXAMPLES / "three-tier-web.yaml").read_text()
        + "\n  reports:\n    type: OS::Nova::Server\n"
        "    depends_on: lb\n    properties:\n      flavor: m1.xlarge\n"
        "      availability_zone: az2\n")

    refused = deployment.client("stack", "place", str(template))

    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "ERROR: No valid host for resource 'reports' of stack "
        + _stack_id("too-big") + "; nothing of the stack was claimed: "
        "0/4 hosts passed. AvailabilityZoneFilter removed 4 (not in the "
        "requested availability zone (az2))"]
    assert deployment.allocations() == []
    assert {h: (n.memory_mb_used, n.vcpus_used)
            for h, n in deployment.nodes().items()} == before
    _audit_clean(deployment)
    # The server keeps serving, and the stack's id is not taken.
    assert _place(deployment, THREE_TIER)["resources"]


@every_database
def test_a_claim_refused_in_sql_rolls_back_the_whole_stack(
        make_deployment):
    # Forcing skips the filters, so the plan puts "pinned" on a host too
    # small for it, after planning the rest: only the claim's capacity
    # check refuses it, inside the one transaction of the stack.
    deployment = make_deployment()
    _fleet(deployment, hosts=4)
    deployment.start_server()
    before = {h: (n.generation, n.memory_mb_used)
              for h, n in deployment.nodes().items()}
    small = {"memory_mb": 1024, "vcpus": 1, "root_gb": 1}
    stack = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000c2",
             "resources": {
                 "web": {"spec": {"flavor": small, "num_instances": 3}},
                 "db": {"spec": {"flavor": small}, "depends_on": ["web"]},
                 "pinned": {"spec": {"flavor": {**small,
                                                "memory_mb": 40000},
                                     "force_hosts": ["host-01"]},
                            "depends_on": ["db"]}}}
    try:
        deployment.api.select_stack({}, stack)
    except exception.NoValidHost as e:
        assert e.message.startswith(
            "No valid host for resource 'pinned' of stack "
            "5a0b0c0d-0000-4000-8000-0000000000c2: the forced host has no "
            "room: compute node"), e.message
    else:
        raise AssertionError("an overcommitting stack was placed")
    assert deployment.allocations() == []
    assert {h: (n.generation, n.memory_mb_used)
            for h, n in deployment.nodes().items()} == before
    _audit_clean(deployment)
    assert deployment.api.release_stack({}, stack["stack_id"]) == 0


@every_database
def test_a_re_sent_stack_held_on_a_deleted_node_is_placed_again(
        make_deployment):
    """A stack whose claim sits on a node since deleted holds no place
    there: its re-send places that resource again on a live node."""
    deployment = make_deployment()
    deployment.add_nodes([node("gone", memory_mb=4096, vcpus=2)])
    deployment.start_server()
    small = {"memory_mb": 1024, "vcpus": 1, "root_gb": 1}
    stack = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000c3",
             "resources": {"web": {"spec": {"flavor": small}}}}
    assert _hosts(deployment.api.select_stack({}, stack)) == {
        "web": ["gone"]}
    deployment.stop_servers()
    n = models.compute_nodes
    with deployment.engine.begin() as conn:
        conn.execute(n.update().where(n.c.host == "gone")
                     .values(deleted=n.c.id))
    deployment.add_nodes([node("alive", memory_mb=4096, vcpus=2)])
    deployment.start_server()

    again = deployment.api.select_stack({}, stack)

    assert _hosts(again) == {"web": ["alive"]}
    alive = deployment.nodes()["alive"]
    assert [a.compute_node_id for a in deployment.allocations()] == [
        alive.id]
    assert alive.memory_mb_used == 1024


@every_database
def test_a_re_sent_stack_restarts_its_claims_ttl(make_deployment):
    """A re-sent stack (its reply was lost) hands its provisional claims
    out again: the caller has the whole TTL from that answer to build."""
    deployment = make_deployment(scheduler__unconfirmed_claim_ttl=3600)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=2)])
    deployment.start_server()
    stack = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000c4",
             "resources": {"web": {"spec": {"flavor": {
                 "memory_mb": 1024, "vcpus": 1, "root_gb": 1}}}}}
    deployment.api.select_stack({}, stack)
    # Most of the TTL has passed since the first answer.
    first = deployment.age_claims(3500)

    again = deployment.api.select_stack({}, stack)

    assert _hosts(again) == {"web": ["only"]}
    [claim] = deployment.allocations()
    assert claim.expires_at >= first


def _stack_id(name: str) -> str:
    from scheduler.stacks.template import stack_id_for
    return stack_id_for(name)


def test_a_cycle_is_refused_with_its_path(make_deployment, tmp_path):
    deployment = make_deployment()
    _fleet(deployment, hosts=2)
    deployment.start_server()
    template = tmp_path / "cycle.yaml"
    template.write_text("""
heat_template_version: 2018-08-31
resources:
  web:
    type: OS::Nova::Server
    depends_on: app
    properties: {flavor: m1.tiny}
  app:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      scheduler_hints: {different_host: {get_resource: db}}
  db:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      networks: [{port: {get_resource: web}}]
""")
    refused = deployment.client("stack", "rank", str(template))
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "ERROR: depends_on/different_host cycle: app -> db -> web -> app"]
    assert deployment.allocations() == []
    assert deployment.api.ping({})


def test_a_changed_stack_is_refused_naming_the_change(make_deployment):
    deployment = make_deployment()
    _fleet(deployment)
    deployment.start_server()
    first = _place(deployment, THREE_TIER)

    changed = deployment.client("stack", "place", THREE_TIER,
                                "-P", "web_flavor=m1.medium")
    assert changed.returncode == 1
    message = changed.stderr.strip()
    assert message.startswith(
        f"ERROR: stack_id: stack {first['stack_id']} is already placed with "
        f"another definition (release it first): ")
    assert message.endswith("resources.web1.spec.flavor changed; "
                            "resources.web2.spec.flavor changed")
    assert len(deployment.allocations()) == 5

    # The dry run of the changed stack under another name claims nothing.
    rank = deployment.client("--json", "stack", "rank", THREE_TIER,
                             "--name", "other", "-P", "web_flavor=m1.medium")
    assert rank.returncode == 0, rank.stderr
    assert json.loads(rank.stdout)["dry_run"] is True
    assert len(deployment.allocations()) == 5


def test_bad_stacks_over_rpc_name_the_field(make_deployment):
    deployment = make_deployment()
    _fleet(deployment, hosts=1)
    deployment.start_server()
    stack = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000c1",
             "resources": {"a": {"spec": {"flavor": {
                 "memory_mb": 512, "vcpus": 1, "root_gb": 1}},
                 "same_host": ["ghost"]}}}
    try:
        deployment.api.select_stack({}, stack)
    except exception.InvalidRequest as e:
        assert e.message == \
            "resources.a.same_host: no resource named 'ghost'"
    else:
        raise AssertionError("an unknown reference was accepted")
    assert deployment.api.release_stack({}, stack["stack_id"]) == 0


def test_a_name_utf8_cannot_carry_is_refused_over_rpc(make_deployment):
    # JSON carries "\ud800" (a lone surrogate) as sent; the server failed
    # with a UnicodeEncodeError, a RemoteError to the caller.
    deployment = make_deployment()
    _fleet(deployment, hosts=1)
    deployment.start_server()
    stack = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000c2",
             "resources": {"web\ud800": {"spec": {"flavor": {
                 "memory_mb": 512, "vcpus": 1, "root_gb": 1}}}}}
    try:
        deployment.api.select_stack({}, stack)
    except exception.InvalidRequest as e:
        assert e.message == (
            "resources: 'web\\ud800' is not valid unicode (it holds "
            "a lone surrogate)")
    else:
        raise AssertionError("a lone surrogate was accepted")
    assert deployment.api.release_stack({}, stack["stack_id"]) == 0


def test_a_stack_naming_another_stacks_instance_is_refused_over_rpc(
        make_deployment):
    """Stack B naming an instance of stack A took A's claim over, and
    releasing A then released B's: refused, A's claim as it was."""
    deployment = make_deployment()
    _fleet(deployment, hosts=2)
    deployment.start_server()
    shared = "1a2b3c4d-0000-4000-8000-00000000000a"
    flavor = {"memory_mb": 512, "vcpus": 1, "root_gb": 1}
    first = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000c3",
             "resources": {"db": {"spec": {"flavor": flavor,
                                           "instance_uuids": [shared]}}}}
    deployment.api.select_stack({}, first)
    before = [(a.consumer_uuid, a.compute_node_id, a.memory_mb)
              for a in deployment.allocations()]
    other = {"stack_id": "5a0b0c0d-0000-4000-8000-0000000000c4",
             "resources": {"app": {"spec": {
                 "flavor": {**flavor, "memory_mb": 1024},
                 "instance_uuids": [shared]}}}}
    try:
        deployment.api.select_stack({}, other)
    except exception.InvalidRequest as e:
        assert e.message == (
            f"resources.app.spec.instance_uuids: {shared} is an "
            f"instance of stack {first['stack_id']} (release it first)")
    else:
        raise AssertionError("another stack's instance was taken over")
    assert [(a.consumer_uuid, a.compute_node_id, a.memory_mb)
            for a in deployment.allocations()] == before
    assert deployment.api.release_stack({}, other["stack_id"]) == 0
    assert deployment.api.release_stack({}, first["stack_id"]) == 1
    _audit_clean(deployment)


def test_a_stack_id_in_braces_is_refused_by_select_and_release_alike(
        make_deployment):
    """release_stack read ``{uuid}`` (as uuid.UUID does) and released the
    stack select_stack refused that id for: one id, two answers."""
    deployment = make_deployment()
    _fleet(deployment, hosts=1)
    deployment.start_server()
    sid = "5a0b0c0d-0000-4000-8000-0000000000c5"
    flavor = {"memory_mb": 512, "vcpus": 1, "root_gb": 1}
    stack = {"stack_id": sid, "resources": {"a": {"spec": {"flavor": flavor}}}}
    deployment.api.select_stack({}, stack)
    braced = "{" + sid.replace("-", "") + "}"
    answers = []
    for call in (lambda: deployment.api.select_stack(
                     {}, {**stack, "stack_id": braced}),
                 lambda: deployment.api.release_stack({}, braced)):
        try:
            call()
        except exception.InvalidRequest as e:
            answers.append(e.message)
        else:
            raise AssertionError(f"{braced} was taken for a stack id")
    refusal = (f"stack_id: expected a uuid (32 hex digits, dashes "
               f"optional), got {braced!r}")
    assert answers == [refusal, refusal]
    assert len(deployment.allocations()) == 1
    assert deployment.api.release_stack({}, sid.upper()) == 1


def test_a_hint_naming_a_server_by_get_attr_show_id_is_a_relation(
        make_deployment, tmp_path):
    # Heat resolves {get_attr: [web1, show, id]} to web1's server id, as
    # {get_resource: web1}: the template was refused ("not an instance
    # uuid").
    deployment = make_deployment()
    _fleet(deployment, hosts=4)
    deployment.start_server()
    template = tmp_path / "by-attr.yaml"
    template.write_text("""
heat_template_version: 2018-08-31
resources:
  web1: {type: OS::Nova::Server, properties: {flavor: m1.small}}
  web2:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      scheduler_hints: {same_host: {get_attr: [web1, show, id]}}
  web3:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      scheduler_hints:
        different_host: [{get_attr: [web1, show, id]}]
""")
    result = _place(deployment, str(template))
    assert result["order"] == [["web1"], ["web2", "web3"]]
    hosts = _hosts(result)
    assert hosts["web2"] == hosts["web1"]
    assert hosts["web3"] != hosts["web1"]
    _audit_clean(deployment)
