"""End to end: nova's own conductor and computes, scheduled by our server
reading nova's databases (issue 42).

Real processes throughout, one set for the module: placement
(``auth_strategy = noauth2``), ``nova-conductor`` and two ``nova-compute``
(``fake.SmallFakeDriver``: 2 vCPUs, 8192 MB, 1028 GB each, 512 MB
reserved by nova's default) on the session's RabbitMQ, nova's API and cell
databases on the session's PostgreSQL (tests/functional/nova_services.py),
as are ours. (Not on SQLite files: nova's services wait there for one
another's locks for at most 5 s, and under CI's load they gave up,
"database is locked", now and then failing a build.) Servers are
booted and deleted through nova's conductor as nova-api would
(tests/functional/nova_conductor_driver.py); our server answers the
conductor's ``select_destinations`` with ``[nova] api_database_connection``
set, so its hosts are the ones nova's computes report.

At each step the test prints, per host, what nova's compute reported in
the cell database and what our server counts (``scheduler-manage host
describe``), and checks the DESIGN rule: our count is the report plus
our claims the report does not include yet, never both, never neither.
"""
from __future__ import annotations

from collections.abc import Iterator
import dataclasses
import json
from pathlib import Path
import re
import time
import uuid

import pytest
import sqlalchemy as sa

from tests.fixtures.jsonlines import JsonLinesProcess
from tests.fixtures.nova_cloud import NovaDriver
from tests.fixtures.nova_cloud import NovaTemplates
from tests.functional.nova_services import NoNetworks
from tests.functional.nova_services import NovaServices
from tests.functional.nova_services import Placement
from tests.functional.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("nova_conductor_driver.py")
#: Nova's control exchange here: ours listens on the same one (topic
#: ``scheduler``). Its own name, so nothing else on the broker answers.
EXCHANGE = f"nova-e2e-{uuid.uuid4().hex[:8]}"
HOSTS = ("compute1", "compute2")
#: What nova reserves on every node (reserved_host_memory_mb's default):
#: a compute with no instances reports this much used.
RESERVED_MB = 512
SMALL = {"name": "e2e.small", "memory_mb": 2048, "vcpus": 1, "root_gb": 10}


@dataclasses.dataclass(frozen=True)
class NovaDatabases:
    """Nova's databases the module runs on: the API database and the one
    cell the computes are in (its mapping's uuid)."""
    api: str
    cell: str
    cell_uuid: str


@pytest.fixture(scope="module")
def nova_venv(nova_python) -> Path:
    """The nova==34.0.0 virtualenv (with placement), built on first use."""
    return Path(nova_python).parents[1]


@pytest.fixture(scope="module")
def nova_databases(nova_venv, rabbitmq, postgresql, tmp_path_factory
                   ) -> Iterator[NovaDatabases]:
    """Nova's API, cell0 and cell databases on PostgreSQL, built by nova-manage
    (tests/fixtures/nova_cloud.py), with cell1's mapping pointed at the
    session's broker: the conductor casts to the computes through it."""
    work = tmp_path_factory.mktemp("nova-databases")
    python = str(nova_venv / "bin" / "python")
    (work / "templates").mkdir()
    templates = NovaTemplates("postgresql", python, postgresql,
                              work / "templates")
    driver = NovaDriver(python, work)
    cloud = templates.copy(work, driver)
    cell = cloud.cell("cell1")
    cloud.op("update_cell", cell="cell1",
             transport_url=rabbitmq.transport_url)
    yield NovaDatabases(api=cloud.api_url, cell=cell.url,
                        cell_uuid=cell.uuid)
    cloud.close()
    driver.close()


@pytest.fixture(scope="module")
def nova(nova_venv, nova_databases, rabbitmq, tmp_path_factory
         ) -> Iterator[NovaServices]:
    """Placement, the neutron stand-in, nova-conductor and the computes
    of :data:`HOSTS`, started once for the module and mapped to cell1."""
    path = tmp_path_factory.mktemp("nova-services")
    began = time.monotonic()
    placement = Placement(nova_venv, path / "placement")
    no_networks = NoNetworks()
    services = NovaServices(
        nova_venv, path, transport_url=rabbitmq.transport_url,
        control_exchange=EXCHANGE, api_database=nova_databases.api,
        cell_database=nova_databases.cell, placement_url="",
        neutron_url="", computes=HOSTS)
    try:
        placement.start()
        no_networks.start()
        services.placement_url = placement.url
        services.neutron_url = no_networks.url
        took = {"placement": time.monotonic() - began, **services.start()}
        print("nova start-up: " + ", ".join(
            f"{k} {v:.1f} s" for k, v in took.items())
            + f"; total {time.monotonic() - began:.1f} s")
        yield services
    finally:
        stopping = time.monotonic()
        services.stop()
        placement.stop()
        print(f"nova stopped in {time.monotonic() - stopping:.1f} s")
        print("neutron stand-in was asked: "
              + "; ".join(sorted(set(no_networks.requests))))
        no_networks.stop()


class ConductorDriver(JsonLinesProcess):
    """nova_conductor_driver.py in the nova venv; an answer with an error
    fails the test."""

    def __init__(self, python: Path, config_file: Path, log: Path) -> None:
        super().__init__([str(python), str(DRIVER), str(config_file)], log)

    def __call__(self, op: str, **request: object) -> dict:
        answer = super().__call__(op, **request)
        assert "error" not in answer, answer
        return answer


@pytest.fixture(scope="module")
def boots(nova, nova_venv) -> Iterator[ConductorDriver]:
    """The boot/delete driver on the conductor's config, with the flavor
    the test boots."""
    driver = ConductorDriver(nova_venv / "bin" / "python",
                             nova.config("conductor"),
                             nova.path / "conductor-driver.log")
    driver("flavor", **SMALL)
    yield driver
    driver.close()


@pytest.fixture
def scheduler(make_deployment, nova_databases, nova):
    """Our server as nova's scheduler, reading nova's databases; debug
    logging, for the line that says where it placed each instance."""
    deployment = make_deployment(
        nova__api_database_connection=nova_databases.api,
        DEFAULT__control_exchange=EXCHANGE, scheduler__topic="scheduler",
        DEFAULT__debug="true")
    deployment.start_server()
    yield deployment
    deployment.stop_servers()


def placed(scheduler, instance: str) -> str:
    """The host our server's reply named for ``instance`` (its debug line
    ``Placed for nova: UUID on HOST``)."""
    found = re.findall(rf"Placed for nova: .*?{instance} on ([^\s,]+)",
                       scheduler.server_log())
    assert found, f"our server never placed {instance}"
    return found[-1]


def reported(nova_databases) -> dict[str, dict[str, int]]:
    """What each compute last wrote into its node row in the cell."""
    engine = sa.create_engine(nova_databases.cell)
    try:
        with engine.connect() as conn:
            return {r.host: {"memory_mb": r.memory_mb_used,
                             "vcpus": r.vcpus_used,
                             "disk_gb": r.local_gb_used}
                    for r in conn.execute(sa.text(
                        "SELECT host, memory_mb_used, vcpus_used, "
                        "local_gb_used FROM compute_nodes "
                        "WHERE deleted = 0"))}
    finally:
        engine.dispose()


def counted(scheduler, host: str) -> dict[str, int]:
    """What our server counts as used on ``host``'s node
    (``scheduler-manage host describe HOST --json``)."""
    described = json.loads(scheduler.manage("host", "describe", host,
                                            "--json").stdout)
    [node] = described["nodes"]
    return {r["resource"]: r["used"] for r in node["resources"]}


def show_usage(step: str, scheduler, nova_databases) -> dict:
    """Print and return, per host, nova's report, our count and our
    claims on it."""
    report = reported(nova_databases)
    ours = {h: counted(scheduler, h) for h in HOSTS}
    claims = len(scheduler.allocations())
    print(f"\n{step}: our claims {claims}")
    for host in HOSTS:
        print(f"  {host}: nova reports {report[host]}, we count {ours[host]}")
    return {"reported": report, "counted": ours}


def boot(boots) -> str:
    """Ask nova's conductor to boot one SMALL server; its uuid."""
    [instance] = boots("boot", flavor=SMALL["name"], count=1,
                       name=f"e2e-{uuid.uuid4().hex[:6]}")["uuids"]
    return instance


def built(boots, instance: str, nova_databases, nova) -> str:
    """Wait until nova built ``instance``; the host it is on."""
    shown = wait_until(
        lambda: (s := boots("show", uuid=instance))["vm_state"] in (
            "active", "error") and s, f"{instance} built", timeout=120)
    assert shown["vm_state"] == "active", (shown, nova.errors())
    assert shown["cell"] == nova_databases.cell_uuid
    return shown["host"]


@pytest.mark.databases("postgresql")
def test_nova_builds_where_we_place_and_reports_take_over(
        nova, boots, scheduler, nova_databases):
    before = show_usage("before any boot", scheduler, nova_databases)
    for host in HOSTS:
        assert before["reported"][host]["memory_mb"] == RESERVED_MB
        assert before["counted"][host] == before["reported"][host]

    first = boot(boots)
    first_host = built(boots, first, nova_databases, nova)
    # Nova's conductor sent the build where our reply said.
    assert first_host == placed(scheduler, first)
    # The compute's report now includes the instance: it counts once, as
    # the report says, not once more as our claim.
    expected = RESERVED_MB + SMALL["memory_mb"]
    wait_until(lambda: reported(nova_databases)[first_host]["memory_mb"]
               == expected, f"{first_host} reports {first}")
    wait_until(lambda: counted(scheduler, first_host)
               == reported(nova_databases)[first_host],
               f"our count of {first_host} is nova's report")
    show_usage(f"after booting {first} on {first_host}", scheduler,
               nova_databases)

    # The computes busy: the build waits in the broker after our claim,
    # which counts on top of a report that does not have it yet.
    with nova.paused(*HOSTS):
        second = boot(boots)
        wait_until(lambda: len(scheduler.allocations()) == 2,
                   f"{second} claimed")
        target = placed(scheduler, second)
        claimed = show_usage(f"{second} claimed on {target}, not built yet",
                             scheduler, nova_databases)
        assert claimed["counted"][target]["memory_mb"] == \
            claimed["reported"][target]["memory_mb"] + SMALL["memory_mb"]
    second_host = built(boots, second, nova_databases, nova)
    assert second_host == target
    wait_until(lambda: all(counted(scheduler, h)
                           == reported(nova_databases)[h] for h in HOSTS),
               "our counts are nova's reports")
    after = show_usage(f"after booting {second} on {second_host}",
                       scheduler, nova_databases)
    total = sum(after["reported"][h]["memory_mb"] for h in HOSTS)
    assert total == 2 * RESERVED_MB + 2 * SMALL["memory_mb"]

    boots("delete", uuid=first)
    wait_until(lambda: boots("show", uuid=first) == {"deleted": True},
               f"{first} deleted", timeout=120)
    freed = RESERVED_MB + (SMALL["memory_mb"] if second_host == first_host
                           else 0)
    wait_until(lambda: reported(nova_databases)[first_host]["memory_mb"]
               == freed, f"{first_host} reports {first} gone")
    wait_until(lambda: counted(scheduler, first_host)
               == reported(nova_databases)[first_host],
               f"our count of {first_host} drops with nova's report")
    show_usage(f"after deleting {first}", scheduler, nova_databases)
    remaining = {a.consumer_uuid for a in scheduler.allocations()}
    assert first not in remaining
    assert nova.errors() == [], nova.logs()
