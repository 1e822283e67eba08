"""Nova's own cell and API databases as the host source: our server reads
the hosts nova's computes write, in two cells, and nova 34's own client
places on them. Nova's databases are built by nova-manage and written by
nova's own objects (tests/fixtures/nova_cloud.py); nothing feeds ours."""
from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import urllib.request
import uuid

import pytest
import sqlalchemy as sa

from tests.fixtures import _net
from tests.functional.conftest import every_database
from tests.functional.conftest import run_command
from tests.fixtures.nova_client import NovaClient
from tests.functional.test_telemetry import scrape
from tests.functional.test_telemetry import value
from tests.functional.waits import wait_until

EXCHANGE = f"nova-source-{uuid.uuid4().hex[:8]}"
SMALL = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}
#: What nova's compute reports used on an empty node: its reserved RAM.
RESERVED = 512


@pytest.fixture(scope="module")
def nova(nova_python, rabbitmq, tmp_path_factory):
    """Nova's client, configured as a nova deployment would be."""
    client = NovaClient.configured(nova_python, rabbitmq.transport_url,
                                   EXCHANGE, tmp_path_factory.mktemp("nova"))
    yield client
    client.close()


def compute(cloud, cell: str, host: str, **sizes) -> str:
    """A compute of 4 vCPUs and 4 GB in ``cell``, reporting its reserved
    RAM used; its node's uuid."""
    node = {"vcpus": 4, "memory_mb": 4096, "local_gb": 100,
            "memory_mb_used": RESERVED, "free_ram_mb": 4096 - RESERVED,
            "free_disk_gb": 100, **sizes}
    return cloud.add_compute(cell, host, **node)["nodes"][0]["uuid"]


@pytest.fixture
def scheduler(make_deployment, nova_cloud):
    """Our server as nova's scheduler, its hosts read from ``nova_cloud``
    (where each test first puts its computes)."""
    made = []

    def start(**options):
        deployment = make_deployment(
            DEFAULT__control_exchange=EXCHANGE, scheduler__topic="scheduler",
            nova__api_database_connection=nova_cloud.api_url,
            nova__sync_interval=0.2, scheduler__db_lock_timeout=2,
            **options)
        made.append(deployment)
        deployment.start_server()
        return deployment
    yield start
    for deployment in made:
        deployment.stop_servers()


@contextlib.contextmanager
def locked(sqlite_url: str):
    """A SQLite cell database held under an exclusive lock: its readers
    wait for it, then fail (database is locked), as a database that
    stopped answering."""
    conn = sqlite3.connect(sa.engine.make_url(sqlite_url).database,
                           isolation_level=None)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def used(deployment, host: str) -> int:
    """What our server plans on: the RAM used on ``host``'s node."""
    return deployment.nodes()[host].memory_mb_used


def balanced(deployment) -> bool:
    """``scheduler-manage allocations audit`` finds every node's usage to
    be nova's report plus the claims it does not hold."""
    return deployment.manage("allocations", "audit").stdout == (
        "audit: usage equals nova's reports plus the claims they do not "
        "hold on every node; no node is over capacity\n")


def boot(nova, flavor=SMALL, **request):
    uuids = [str(uuid.uuid4()) for _ in range(request.pop("count", 1))]
    answer = nova("select", flavor=flavor, instance_uuids=uuids, **request)
    assert "selections" in answer, answer
    return uuids, answer["selections"]


@every_database
def test_nova_places_on_the_hosts_of_its_cells_each_with_its_cell(
        nova, nova_cloud, scheduler):
    cell1, cell2 = nova_cloud.cell("cell1"), nova_cloud.cell("cell2")
    compute(nova_cloud, "cell1", "c1")
    compute(nova_cloud, "cell2", "c2")
    deployment = scheduler()

    _, selections = boot(nova, count=2, group={
        "uuid": str(uuid.uuid4()), "policy": "anti-affinity"})

    cells = {s[0]["service_host"]: s[0]["cell_uuid"] for s in selections}
    assert cells == {"c1": cell1.uuid, "c2": cell2.uuid}
    assert used(deployment, "c1") == used(deployment, "c2") == \
        RESERVED + 1024
    answer = nova("select", flavor={**SMALL, "memory_mb": 8192},
                  instance_uuids=[str(uuid.uuid4())])
    assert answer["error"] == "nova.exception.NoValidHost"
    assert "0/2 hosts passed. RamFilter removed 2" in answer["message"]


@every_database
def test_the_compute_report_takes_over_from_the_claim_never_both(
        nova, nova_cloud, scheduler):
    node = compute(nova_cloud, "cell1", "c1")
    deployment = scheduler()

    [instance], _ = boot(nova)
    # Claimed: on top of the report, which does not have it yet.
    assert used(deployment, "c1") == RESERVED + 1024
    assert balanced(deployment)

    # Nova's conductor builds it there: the compute's claim writes the
    # instance's host and node, then the node with its usage, and goes on
    # to build it (the instance moves on past building).
    nova_cloud.add_instance("cell1", SMALL, uuid=instance, host="c1",
                            node="c1", vm_state="building",
                            task_state=None)
    nova_cloud.update_node("cell1", node, memory_mb_used=RESERVED + 1024,
                           free_ram_mb=4096 - RESERVED - 1024,
                           vcpus_used=1, local_gb_used=10, free_disk_gb=90,
                           running_vms=1, current_workload=1)
    nova_cloud.update_instance("cell1", instance, task_state="networking")
    wait_until(lambda: deployment.allocations()[0].reported_node_id
               == deployment.nodes()["c1"].id, "the claim seen reported")
    # The report has it, and the claim no longer counts on top of it.
    assert deployment.nodes()["c1"].current_workload == 1
    assert used(deployment, "c1") == RESERVED + 1024
    [claim] = deployment.allocations()
    assert claim.expires_at is None      # confirmed: the instance is there
    assert balanced(deployment)

    # Deleted: the compute reports it gone; the claim, released by the
    # cast that follows, gives back nothing the report still counted.
    nova_cloud.delete_instance("cell1", instance)
    nova_cloud.update_node("cell1", node, memory_mb_used=RESERVED,
                           free_ram_mb=4096 - RESERVED, vcpus_used=0,
                           local_gb_used=0, free_disk_gb=100, running_vms=0,
                           current_workload=2)
    wait_until(lambda: deployment.nodes()["c1"].current_workload == 2,
               "the compute's report read")
    assert used(deployment, "c1") == RESERVED
    nova("delete_instance_info", host="c1", uuid=instance)
    wait_until(lambda: not deployment.allocations(), "the claim released")
    assert used(deployment, "c1") == RESERVED

    # Books that do not balance against the report are found and mended.
    with deployment.engine.begin() as conn:
        conn.execute(sa.text("UPDATE compute_nodes SET memory_mb_used = "
                             "memory_mb_used + 100"))
    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 1 and "usage mismatch" in audit.stdout
    deployment.manage("allocations", "audit", "--fix")
    assert balanced(deployment) and used(deployment, "c1") == RESERVED


def test_a_move_kept_in_its_cell_lands_on_a_host_of_that_cell(
        nova, nova_cloud, scheduler):
    cell1 = nova_cloud.cell("cell1")
    compute(nova_cloud, "cell1", "c1")
    compute(nova_cloud, "cell1", "c3")
    compute(nova_cloud, "cell2", "c2", memory_mb=16384,
            free_ram_mb=16384 - RESERVED)
    scheduler()

    # The RAM weigher alone would pick c2 (cell2); nova's conductor keeps
    # a cold migration in the instance's cell.
    [instance], [[booted, *_]] = boot(nova, destination_cell=cell1.uuid)
    assert booted["cell_uuid"] == cell1.uuid
    [[moved, *_]] = nova("select", flavor=SMALL, instance_uuids=[instance],
                         ignore_hosts=[booted["service_host"]],
                         destination_cell=cell1.uuid)["selections"]
    assert {booted["service_host"], moved["service_host"]} == {"c1", "c3"}
    assert moved["cell_uuid"] == cell1.uuid


def test_hints_name_instances_nova_placed_before_us(
        nova, nova_cloud, scheduler):
    compute(nova_cloud, "cell1", "c1")
    compute(nova_cloud, "cell2", "c2")
    there = nova_cloud.add_instance("cell2", SMALL, host="c2", node="c2",
                                    vm_state="active")
    scheduler(filter_scheduler__enabled_filters="ComputeFilter,"
              "SameHostFilter,DifferentHostFilter")

    for hint, host in (("same_host", "c2"), ("different_host", "c1")):
        _, [[chosen, *_]] = boot(nova, hints={hint: [there]})
        assert chosen["service_host"] == host, hint


def test_cells_created_or_disabled_later_are_seen(
        nova, nova_cloud, scheduler, tmp_path):
    compute(nova_cloud, "cell1", "c1")
    compute(nova_cloud, "cell2", "c2")
    deployment = scheduler(nova__cell_refresh_interval=3600)

    def placed_apart_from(*hosts: str) -> dict | None:
        answer = nova("select", flavor=SMALL, ignore_hosts=list(hosts),
                      instance_uuids=[str(uuid.uuid4())])
        return answer["selections"][0][0] if "selections" in answer \
            else None

    # A cell created while it runs: read on SIGHUP.
    cell3 = nova_cloud.add_cell("cell3", tmp_path)
    compute(nova_cloud, "cell3", "c3")
    os.kill(deployment.servers[-1].pid, signal.SIGHUP)
    chosen = wait_until(lambda: placed_apart_from("c1", "c2"),
                        "cell3's host placed on")
    assert (chosen["service_host"], chosen["cell_uuid"]) == ("c3",
                                                             cell3.uuid)
    deployment.stop_servers()

    # A cell disabled: no longer read once the mappings are read again.
    scheduler(nova__cell_refresh_interval=1)
    assert placed_apart_from("c1", "c3")["service_host"] == "c2"
    nova_cloud.update_cell("cell2", disabled=True)
    wait_until(lambda: placed_apart_from("c1", "c3") is None,
               "cell2's host no longer placed on")


def test_hosts_nova_says_are_down_or_disabled_are_not_placed_on(
        nova, nova_cloud, scheduler):
    for host in ("c1", "c2", "c3"):
        compute(nova_cloud, "cell1", host)
    nova_cloud.update_service("cell1", "c2", disabled=True,
                              disabled_reason="maintenance")
    # Nova's rule: last heartbeat older than service_down_time (60 s).
    nova_cloud.heartbeat("cell1", "c3", seconds_ago=120)
    scheduler()

    _, selections = boot(nova)
    assert selections[0][0]["service_host"] == "c1"
    answer = nova("select", flavor=SMALL, ignore_hosts=["c1"],
                  instance_uuids=[str(uuid.uuid4())])
    assert "ComputeFilter removed 2 (service down or disabled)" in \
        answer["message"], answer

    # Enabled again, heard from again: placed on again, and disabled now.
    nova_cloud.update_service("cell1", "c2", disabled=False,
                              disabled_reason=None)
    nova_cloud.heartbeat("cell1", "c3")
    nova_cloud.update_service("cell1", "c1", disabled=True,
                              disabled_reason="maintenance")
    for host, ignored in (("c2", ["c1", "c3"]), ("c3", ["c1", "c2"])):
        wait_until(lambda: "selections" in nova(
            "select", flavor=SMALL, ignore_hosts=ignored,
            instance_uuids=[str(uuid.uuid4())]), f"{host} placed on")
    answer = nova("select", flavor=SMALL, ignore_hosts=["c2", "c3"],
                  instance_uuids=[str(uuid.uuid4())])
    assert "ComputeFilter removed 1" in answer["message"], answer


def test_a_cell_that_stops_answering_has_its_hosts_skipped_and_said(
        nova, nova_cloud, scheduler):
    compute(nova_cloud, "cell1", "c1")
    compute(nova_cloud, "cell2", "c2")
    [port] = _net.free_ports(1)
    deployment = scheduler(scheduler__http_listen=f"127.0.0.1:{port}")
    cell2 = nova_cloud.cell("cell2")

    def health() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthcheck",
                                    timeout=30) as response:
            return response.read().decode()

    def too_big() -> str:
        """The refusal of a boot no host can take (claims nothing)."""
        return nova("select", flavor={**SMALL, "memory_mb": 8192},
                    instance_uuids=[str(uuid.uuid4())])["message"]

    with locked(cell2.url):
        # Until cell2 answers again, only cell1's host is placed on, and
        # a refusal says why the others were not looked at.
        wait_until(lambda: "cell cell2" in too_big(), "a refusal naming it")
        answer = too_big()
        assert (f"cell cell2 ({cell2.uuid}) is not answering"
                in answer), answer
        assert "its hosts were skipped" in answer
        _, selections = boot(nova)
        assert selections[0][0]["service_host"] == "c1"
        # Still serving, and saying what it cannot see.
        wait_until(lambda: health().startswith(
            f"OK; degraded: cell cell2 ({cell2.uuid}) is not answering"),
            "/healthcheck naming the cell")
    wait_until(lambda: "cell cell2" not in too_big(), "cell2 read again")
    wait_until(lambda: health() == "OK\n", "/healthcheck all clear")
    samples = scrape(f"http://127.0.0.1:{port}/metrics")
    assert value(samples, "scheduler_nova_cell_read_failures_total",
                 cell=cell2.uuid) >= 1
    assert value(samples, "scheduler_nova_sync_seconds_count") >= 1
    _, selections = boot(nova, ignore_hosts=["c1"])
    assert selections[0][0]["service_host"] == "c2"
    assert "Traceback" not in deployment.server_log()


def server_refusal(deployment) -> str:
    """The one line our server exits with, failing to start."""
    result = run_command("server", "--config-file",
                         str(deployment.config_file), check=False)
    lines = result.stderr.splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert lines[0].startswith("ERROR: ") and "Traceback" not in \
        result.stderr
    return lines[0]


def test_what_cannot_be_read_of_nova_is_one_line_naming_it_and_the_fix(
        make_deployment, nova_cloud, database_url, tmp_path):
    cell1, cell2 = nova_cloud.cell("cell1"), nova_cloud.cell("cell2")

    # An API database that is not nova's (our own, by mistake).
    assert server_refusal(make_deployment(
        nova__api_database_connection=database_url)) == (
        "ERROR: [nova] api_database_connection: not a nova database: it "
        "has no cell_mappings, host_mappings tables")

    deployment = make_deployment(
        nova__api_database_connection=nova_cloud.api_url)
    # A cell whose database cannot be opened.
    missing = f"sqlite:///{tmp_path}/gone/cell2.sqlite"
    nova_cloud.update_cell("cell2", database_connection=missing)
    line = server_refusal(deployment)
    assert line.startswith(f"ERROR: cell cell2 ({cell2.uuid}): its "
                           f"database cannot be read (OperationalError: ")
    assert line.endswith("check its database_connection (nova-manage "
                         "cell_v2 list_cells --verbose) and that its "
                         "server is up")
    nova_cloud.update_cell("cell2", database_connection=cell2.url)

    # A cell database older than nova 34's schema.
    engine = sa.create_engine(cell1.url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = "
                             "'2903cd72dc14'"))
    engine.dispose()
    assert server_refusal(deployment) == (
        f"ERROR: cell cell1 ({cell1.uuid}): nova schema version "
        f"2903cd72dc14 is older than nova 34's ab450ba04102; run "
        f"'nova-manage db sync' with nova 34 for it")
    status = run_command("status", "--config-file",
                         str(deployment.config_file), "upgrade", "check",
                         check=False)
    assert "is older than nova 34's" in status.stdout
