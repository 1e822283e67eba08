"""scheduler-manage host and aggregate administration against a running
scheduler-server: the real command (a subprocess) on SQLite and
PostgreSQL, and placements over a real RabbitMQ that follow its changes."""
from __future__ import annotations

import json
import threading

import pytest
import sqlalchemy as sa

from scheduler.admin import aggregates
from scheduler.admin import audit
from scheduler.hosts import capacity
from scheduler.claims import consume
from scheduler.hosts.planned import Claim
from scheduler import exception
from scheduler.sim import fleet
from scheduler.db import models
from tests.functional.conftest import every_database
from tests.functional.conftest import node
from tests.functional.waits import lock_waits

FLAVOR = {"name": "m1.tiny", "memory_mb": 512, "vcpus": 1, "root_gb": 1}
FAST = {"compute-00002", "compute-00005"}


def _hosts_of(deployment, zone: str, num_instances: int = 6,
              **spec) -> set[str]:
    result = deployment.api.select_destinations(
        {}, {"num_instances": num_instances, "flavor": FLAVOR,
             "availability_zone": zone, **spec})
    assert len(result) == num_instances
    return {d["host"] for d in result}


def _json(deployment, *args: str):
    return json.loads(deployment.manage("--json", *args).stdout)


def test_aggregate_zone_steers_placement(make_deployment):
    deployment = make_deployment()
    deployment.fleet(6)
    out = deployment.manage("aggregate", "create", "fast", "--zone",
                            "az-fast").stdout
    assert out == "created aggregate fast in zone az-fast\n"
    for host in sorted(FAST):
        deployment.manage("aggregate", "add-host", "fast", host)
    hosts = {h["host"]: h for h in _json(deployment, "host", "list")}
    assert len(hosts) == 6
    assert {h for h in hosts if "az-fast" in hosts[h]["zones"]} == FAST
    assert all(h["state"] == "up" and h["nodes"] == 1
               for h in hosts.values())
    deployment.start_server()

    # only the aggregate's hosts are in the new zone
    assert _hosts_of(deployment, "az-fast", num_instances=8) <= FAST
    # the fleet's own zones still work
    assert _hosts_of(deployment, "az1", num_instances=2) <= {
        "compute-00003", "compute-00006"}

    # the running server follows a changed zone
    out = deployment.manage("aggregate", "set-metadata", "fast",
                            "availability_zone=az-gold", "ssd=true").stdout
    assert out == ("aggregate fast metadata: availability_zone=az-gold, "
                   "ssd=true\n")
    with pytest.raises(exception.NoValidHost):
        _hosts_of(deployment, "az-fast", num_instances=1)
    assert _hosts_of(deployment, "az-gold") <= FAST

    # ... a host taken out of the aggregate
    deployment.manage("aggregate", "remove-host", "fast", "compute-00005")
    assert _hosts_of(deployment, "az-gold") == {"compute-00002"}

    # ... and a deleted aggregate (refused while it has hosts)
    refused = deployment.manage("aggregate", "delete", "fast", check=False)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        "ERROR: aggregate 'fast' still has 1 host(s): compute-00002; "
        "remove them first or use --force\n")
    assert _hosts_of(deployment, "az-gold", num_instances=1) == {
        "compute-00002"}
    out = deployment.manage("aggregate", "delete", "fast", "--force").stdout
    assert out == "deleted aggregate fast (removed 1 host(s))\n"
    with pytest.raises(exception.NoValidHost):
        _hosts_of(deployment, "az-gold", num_instances=1)
    assert "fast" not in {a["name"] for a in _json(deployment, "aggregate",
                                                   "list")}
    # the name is free again
    deployment.manage("aggregate", "create", "fast")


def test_aggregate_errors(make_deployment):
    deployment = make_deployment()
    deployment.fleet(6)
    deployment.manage("aggregate", "create", "fast", "--zone", "az-fast")
    deployment.manage("aggregate", "add-host", "fast", "compute-00001")
    for args, message in [
            (("aggregate", "create", "fast"),
             "aggregate 'fast' already exists"),
            (("aggregate", "add-host", "fast", "compute-00001"),
             "host 'compute-00001' is already in aggregate 'fast'"),
            (("aggregate", "add-host", "fast", "compute-09999"),
             "no compute host 'compute-09999'"),
            (("aggregate", "add-host", "nope", "compute-00001"),
             "no aggregate 'nope'"),
            (("aggregate", "remove-host", "fast", "compute-00002"),
             "host 'compute-00002' is not in aggregate 'fast'"),
            (("aggregate", "set-metadata", "nope", "a=b"),
             "no aggregate 'nope'"),
            (("aggregate", "delete", "nope"), "no aggregate 'nope'"),
            (("host", "describe", "compute-09999"),
             "no compute host 'compute-09999'")]:
        result = deployment.manage(*args, check=False)
        assert (result.returncode, result.stdout, result.stderr) == (
            1, "", f"ERROR: {message}\n"), args
    aggregates = {a["name"]: a for a in _json(deployment, "aggregate",
                                              "list")}
    assert aggregates["fast"]["hosts"] == ["compute-00001"]
    assert aggregates["fast"]["metadata"] == {"availability_zone": "az-fast"}


def test_host_describe_shows_usage_per_project(make_deployment):
    deployment = make_deployment()
    deployment.fleet(6)
    deployment.manage("aggregate", "create", "one", "--zone", "az-one")
    deployment.manage("aggregate", "add-host", "one", "compute-00004")
    deployment.start_server()
    _hosts_of(deployment, "az-one", num_instances=2, project_id="proj-a")
    _hosts_of(deployment, "az-one", num_instances=1, project_id="proj-b")

    host = _json(deployment, "host", "describe", "compute-00004")
    assert host["host"] == "compute-00004"
    assert host["zones"] == ["az-one", "az2"]
    assert sorted(a["name"] for a in host["aggregates"]) == ["az2", "one"]
    [node] = host["nodes"]
    assert node["projects"] == [
        {"project_id": "proj-a", "instances": 2, "moving": 0, "vcpus": 2,
         "memory_mb": 1024, "disk_gb": 2},
        {"project_id": "proj-b", "instances": 1, "moving": 0,
         "vcpus": 1, "memory_mb": 512, "disk_gb": 1}]
    used = {r["resource"]: r["used"] for r in node["resources"]}
    assert used == {"vcpus": 3, "memory_mb": 1536, "disk_gb": 3}
    row = deployment.nodes()["compute-00004"]
    vcpus = node["resources"][0]
    assert (vcpus["total"], vcpus["ratio"], vcpus["capacity"]) == (
        row.vcpus, row.cpu_allocation_ratio,
        row.vcpus * row.cpu_allocation_ratio)

    text = deployment.manage("host", "describe", "compute-00004").stdout
    lines = text.splitlines()
    assert lines[:4] == ["host:   compute-00004", "status: enabled",
                         "state:  up", "zones:  az-one, az2"]
    usage = lines[lines.index("usage by project on compute-00004:") + 3:]
    assert [line.split() for line in usage] == [
        ["proj-a", "2", "0", "2", "1024", "2"],
        ["proj-b", "1", "0", "1", "512", "1"]]


@pytest.mark.databases("mysql")
def test_audit_json_numbers_are_numbers(make_deployment):
    """On MariaDB SUM() is DECIMAL: --json printed "allocated": "1"."""
    deployment = make_deployment()
    deployment.fleet(2)
    deployment.start_server()
    _hosts_of(deployment, "az2", num_instances=1)
    with deployment.engine.begin() as conn:
        conn.execute(models.compute_nodes.update().values(vcpus_used=999))
    result = deployment.manage("--json", "allocations", "audit",
                               check=False)
    problems = json.loads(result.stdout)["problems"]
    assert {p["allocated"] for p in problems} == {0, 1}, result.stdout


@pytest.mark.databases("mysql")
def test_host_names_in_another_case_on_mariadb(make_deployment):
    """MariaDB compares host columns case-insensitively, so add-host and
    describe accept COMPUTE-00001; the membership must then be the real
    host's (it was stored as typed, and placement, host list and the
    zones of describe ignored it) and describe must show its zones."""
    deployment = make_deployment()
    deployment.fleet(2)
    deployment.start_server()
    assert deployment.manage("aggregate", "add-host", "az1",
                             "COMPUTE-00001").returncode == 0
    hosts = {h["host"]: h for h in _json(deployment, "host", "list")}
    assert hosts["compute-00001"]["zones"] == ["az1", "az2"]
    assert _json(deployment, "host", "describe",
                 "COMPUTE-00001")["zones"] == ["az1", "az2"]
    assert _hosts_of(deployment, "az1", num_instances=1) == {
        "compute-00001"}


@pytest.mark.databases("mysql")
def test_set_metadata_key_in_another_case_on_mariadb(make_deployment):
    """Not a database error (MariaDB's unique key holds 'ssd' and 'SSD'
    for one key): the one-line refusal every database gives."""
    deployment = make_deployment()
    deployment.fleet(1)
    deployment.manage("aggregate", "set-metadata", "az1", "ssd=true")
    result = deployment.manage("aggregate", "set-metadata", "az1",
                               "SSD=false", check=False)
    assert (result.returncode, result.stderr) == (1, (
        "ERROR: metadata key 'SSD' differs from 'ssd' only in case, accents "
        "or trailing blanks, which MariaDB does not tell apart; use "
        "'ssd'\n"))
    [az1] = [a for a in _json(deployment, "aggregate", "list")
             if a["name"] == "az1"]
    assert az1["metadata"]["ssd"] == "true"


@pytest.mark.parametrize("existing, asked", [
    ({"availability_zone": "az1"}, {"Availability_Zone": "az:1"}),
    ({}, {"AVAILABILITY_ZONE": "az:1"}),
    ({}, {"Availability_Zone": "az2"}),
    ({"ssd": "true"}, {"SSD": "false"}),
    ({"ssd": "true"}, {"SSD": ""}),
    ({}, {"ssd": "true", "SSD": "false"}),
    ({"ssd": "true"}, {"ssd ": "false"}),
    # MariaDB's collations ignore accents too.
    ({"café": "true"}, {"cafe": "false"}),
    ({}, {"cafe": "true", "CAFÉ": "false"}),
])
@every_database
def test_a_key_in_another_case_is_refused_on_every_database(
        engine, existing, asked):
    """nova reads only ``availability_zone`` (a dict key, case sensitive):
    on MariaDB, which compares keys without regard to case, a key in
    another case changed the zone of the stored key past the zone check
    (or another key); on SQLite and PostgreSQL it made a second key the
    scheduler ignores. Every database now refuses it, changing nothing."""
    aggregates.create_aggregate(engine, "rack1")
    if existing:
        aggregates.set_aggregate_metadata(engine, "rack1", existing)
    with pytest.raises(exception.InvalidRequest) as caught:
        aggregates.set_aggregate_metadata(engine, "rack1", asked)
    assert "which MariaDB does not tell apart" in str(caught.value), \
        caught.value
    assert aggregates.get_aggregate(engine, "rack1")["metadata"] == existing


def _removes_only(engine, legacy: dict[str, str], removed: str) -> None:
    """An aggregate holding ``legacy`` as stored before the refusal above
    (written straight into its table): setting ``removed`` empty removes
    that key alone."""
    aggregates.create_aggregate(engine, "rack1")
    agg_id = aggregates.get_aggregate(engine, "rack1")["id"]
    md = models.aggregate_metadata
    with engine.begin() as conn:
        for key, value in legacy.items():
            conn.execute(md.insert().values(
                aggregate_id=agg_id, key=key, value=value, deleted=0))
    kept = {k: v for k, v in legacy.items() if k != removed}
    assert aggregates.set_aggregate_metadata(
        engine, "rack1", {removed: ""}) == kept
    assert aggregates.get_aggregate(engine, "rack1")["metadata"] == kept


@every_database
def test_a_zone_key_stored_in_another_case_before_can_be_removed(engine):
    """A zone key in another case stored before the refusal above is the
    aggregate's own: setting it empty, the only way to remove it, removes
    it. It was refused as a new spelling, so it could never go."""
    _removes_only(engine, {"Availability_Zone": "az2"}, "Availability_Zone")


@pytest.mark.databases("sqlite", "postgresql")
@pytest.mark.parametrize("legacy, removed", [
    ({"ssd": "true", "SSD": "false"}, "SSD"),
    ({"availability_zone": "az1", "Availability_Zone": "az2"},
     "Availability_Zone"),
])
def test_a_second_spelling_stored_before_can_be_removed(
        engine, legacy, removed):
    """On SQLite and PostgreSQL (MariaDB's unique key holds one spelling)
    a second key in another case stored before the refusal above is
    removed alone, the key nova reads kept."""
    _removes_only(engine, legacy, removed)


A1 = "56565656-0000-4000-8000-000000000001"
A2 = "56565656-0000-4000-8000-000000000002"


def _node(engine):
    with engine.connect() as conn:
        return conn.execute(sa.select(models.compute_nodes)).one()


def _sum(engine, column):
    a = models.allocations
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.coalesce(
            sa.func.sum(a.c[column]), 0))).scalar_one()


@every_database
def test_audit_fix_keeps_a_claim_committed_while_it_waited(engine):
    """--fix recomputes usage from the allocations; a claim that held a
    node's row while the fix began must be in the result (it was not: the
    UPDATE summed what it saw when it started)."""
    fleet.register(engine, [node("h1", vcpus=8, memory_mb=8192)])
    row = _node(engine)
    consume.claim(engine, [Claim(A1, row.id, "h1", row.generation,
                                 1, 512, 1)])
    with engine.begin() as conn:   # the drift the audit reports
        conn.execute(models.compute_nodes.update().values(vcpus_used=0))
    row = _node(engine)
    conn = engine.connect()
    tx = conn.begin()
    consume.claim_in(conn, [Claim(A2, row.id, "h1", row.generation,
                                  1, 512, 1)])
    fixer = threading.Thread(target=audit.fix_usage, args=(engine,))
    with lock_waits(engine) as waiting:
        fixer.start()
        waiting(1)             # the fix waits for the node's row lock
    tx.commit()
    conn.close()
    fixer.join(30)
    row = _node(engine)
    assert (row.vcpus_used, row.memory_mb_used) == (
        _sum(engine, "vcpus"), _sum(engine, "memory_mb"))


def _in_another_transaction(engine, write, admin_call):
    """Run ``admin_call()`` in a thread while ``write(conn)`` is made and
    not yet committed in a transaction of its own (another operator's
    command half-way through); commit it, and return what the admin call
    returned or raised."""
    outcome: list = []

    def call():
        try:
            outcome.append(admin_call())
        except Exception as e:     # the outcome under test
            outcome.append(e)

    conn = engine.connect()
    tx = conn.begin()
    write(conn)
    caller = threading.Thread(target=call)
    with lock_waits(engine) as waiting:
        caller.start()
        waiting(1)             # the call reaches what the write holds
    tx.commit()
    conn.close()
    caller.join(30)
    assert not caller.is_alive()
    return outcome[0]


def _live_aggregates(engine, name):
    agg = models.aggregates
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).where(
            agg.c.name == name, agg.c.deleted == 0)).scalar_one()


@every_database
def test_two_creates_of_one_aggregate_make_one(engine):
    """Automation that runs ``aggregate create rack1`` on every controller
    at once gets one aggregate and a clear refusal, not two aggregates of
    one name (each checked before the other committed)."""
    def create(conn):
        conn.execute(models.aggregates.insert().values(
            uuid="56565656-0000-4000-8000-0000000000a1", name="rack1",
            deleted=0))

    outcome = _in_another_transaction(
        engine, create, lambda: aggregates.create_aggregate(engine, "rack1"))

    assert isinstance(outcome, exception.InvalidRequest), outcome
    assert str(outcome) == "aggregate 'rack1' already exists"
    assert _live_aggregates(engine, "rack1") == 1


@every_database
def test_two_settings_of_one_new_metadata_key_keep_the_last(engine):
    aggregates.create_aggregate(engine, "rack1")
    agg_id = aggregates.get_aggregate(engine, "rack1")["id"]

    def set_first(conn):
        conn.execute(models.aggregate_metadata.insert().values(
            aggregate_id=agg_id, key="ssd", value="false", deleted=0))

    outcome = _in_another_transaction(
        engine, set_first, lambda: aggregates.set_aggregate_metadata(
            engine, "rack1", {"ssd": "true"}))

    assert outcome == {"ssd": "true"}
    assert aggregates.get_aggregate(engine, "rack1")["metadata"] == {
        "ssd": "true"}


@every_database
def test_audit_reports_claims_left_on_a_deleted_node(engine):
    """A node deleted (or re-created under a new uuid) while it holds
    claims: they count on no node the scheduler plans on, yet the audit
    said the books balance (it read live nodes only)."""
    fleet.register(engine, [node("h1", vcpus=8, memory_mb=8192)])
    row = _node(engine)
    consume.claim(engine, [Claim(A1, row.id, "h1", row.generation,
                                 1, 512, 1)])
    n = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(n.update().values(deleted=n.c.id))

    problems = audit.audit_allocations(engine, capacity.Ratios())

    assert {(p["host"], p["node"], p["resource"], p["problem"],
             p["allocated"]) for p in problems} == {
        ("h1", "h1", "vcpus", "claims on a deleted node", 1),
        ("h1", "h1", "memory_mb", "claims on a deleted node", 512),
        ("h1", "h1", "disk_gb", "claims on a deleted node", 1)}


def test_audit_fix_leaves_claims_on_a_deleted_node_an_error(
        make_deployment):
    """--fix recomputes usage; it cannot put claims on a deleted node
    anywhere, so the command still fails and names them."""
    deployment = make_deployment()
    deployment.add_nodes([node("h1", vcpus=8, memory_mb=8192)])
    row = _node(deployment.engine)
    consume.claim(deployment.engine, [Claim(
        A1, row.id, "h1", row.generation, 1, 512, 1)])
    n = models.compute_nodes
    with deployment.engine.begin() as conn:
        conn.execute(n.update().values(deleted=n.c.id))

    result = deployment.manage("allocations", "audit", "--fix", check=False)

    assert result.returncode == 1, result.stdout
    assert "claims on a deleted node" in result.stdout
