"""Nova's casts on each real database (tests/unit/nova/test_casts.py has
the rules, on SQLite)."""
from __future__ import annotations

import datetime
import time

import oslo_messaging as messaging
import pytest

from scheduler.claims import consume
from scheduler.claims import lifecycle
from scheduler.db import allocations
from scheduler.hosts.planned import Claim
from scheduler.db import models
from scheduler.nova import casts
from tests.functional.conftest import continued_lines
from tests.functional.conftest import every_database
from tests.functional.conftest import node
from tests.functional.waits import wait_until
from tests.unit.fakes import node_row

VM = "aaaaaaaa-0000-4000-8000-00000000000a"


@every_database
def test_an_instance_uuid_in_upper_case_is_the_same_instance(
        make_deployment):
    """Claims store uuids in lower case. A cast naming the instance in
    upper case matched no claim on SQLite and PostgreSQL (its claim was
    left to expire under a running instance), and on MariaDB, whose
    comparison ignores case, ended in "cast ... not applied: KeyError"."""
    deployment = make_deployment()
    deployment.add_nodes([node("h1")])
    engine = deployment.engine
    row = node_row(engine, "h1")
    consume.claim(engine, [Claim(
        consumer_uuid=VM, node_id=row.id, host="h1",
        generation=row.generation, vcpus=1, memory_mb=1024, disk_gb=10)],
        ttl=3600)

    assert casts.listed(engine, casts.uuids_listed([VM.upper()], "h1")) == 1
    assert allocations.holdings(engine, [VM])[VM].provisional is False
    assert casts.gone(engine, casts.uuids_listed([VM.upper()], "h1")) == 1
    assert allocations.holdings(engine, [VM]) == {}


@every_database
def test_a_resize_reported_after_its_destination_expired_keeps_its_size(
        make_deployment):
    """The expired destination a claim remembers (migration 0010) brings
    the resize back, at its new size, when finish_resize reports it."""
    deployment = make_deployment()
    deployment.add_nodes([node("h1"), node("h2")])
    engine = deployment.engine
    for host, memory_mb, move in (("h1", 1024, []), ("h2", 2048, [VM])):
        row = node_row(engine, host)
        consume.claim(engine, [Claim(
            consumer_uuid=VM, node_id=row.id, host=host,
            generation=row.generation, vcpus=1, memory_mb=memory_mb,
            disk_gb=10)], move=move, ttl=3600)
    a = models.allocations
    with engine.begin() as conn:
        conn.execute(a.update().values(
            expires_at=datetime.datetime(2000, 1, 1)))
    assert lifecycle.expire(engine) == 1               # disk still copying

    assert casts.seen(engine, {VM: "h2"}, {VM}) == 1   # finish_resize
    assert {h: node_row(engine, h).memory_mb_used for h in ("h1", "h2")
            } == {"h1": 1024, "h2": 2048}
    assert casts.gone(engine, {VM: "h1"}) == 1      # confirm
    assert {h: node_row(engine, h).memory_mb_used for h in ("h1", "h2")
            } == {"h1": 0, "h2": 2048}


def _cast(deployment, method: str, **kwargs) -> None:
    """Send a fanout cast as nova's scheduler client does (RPC 4.x)."""
    client = messaging.get_rpc_client(
        deployment.api.transport,
        messaging.Target(topic=deployment.conf.scheduler.topic,
                         version="4.0", fanout=True),
        serializer=messaging.serializer.NoOpSerializer())
    client.cast({}, method, **kwargs)


def _serving_a_claim_on_h1(deployment, ttl: int = 0):
    """``deployment`` with one node, h1, its server started, and VM's
    claim on h1 (expiring in ``ttl`` seconds, or permanent)."""
    deployment.add_nodes([node("h1")])
    deployment.start_server()
    row = node_row(deployment.engine, "h1")
    consume.claim(deployment.engine, [Claim(
        consumer_uuid=VM, node_id=row.id, host="h1",
        generation=row.generation, vcpus=1, memory_mb=1024, disk_gb=10)],
        ttl=ttl)
    return deployment


@pytest.mark.databases("postgresql", "mysql")
def test_a_cast_while_the_database_is_away_is_one_line_and_the_next_applies(
        make_deployment, database_server):
    """A cast has no caller to answer: with the database away longer than
    [scheduler] db_outage_timeout it is logged in one line naming the
    database and the fix, as a request's failure is (not the driver's
    text, which spans lines on PostgreSQL), and the instance and host it
    was about (it named only the host), and once the database is back
    the next cast is applied."""
    deployment = _serving_a_claim_on_h1(
        make_deployment(scheduler__db_outage_timeout=2))
    engine = deployment.engine
    database_server.kill()
    try:
        _cast(deployment, "delete_instance_info", host_name="h1",
              instance_uuid=VM)
        wait_until(lambda: "not applied" in deployment.server_log(),
                   "the cast logged as not applied")
    finally:
        database_server.start()
    engine.dispose()
    _cast(deployment, "delete_instance_info", host_name="h1",
          instance_uuid=VM)
    wait_until(lambda: deployment.allocations() == [],
               "the claim released")

    log = deployment.server_log()
    assert continued_lines(log) == [], log
    [line] = [line for line in log.splitlines() if "not applied" in line]
    # The line ends with the fix: not the driver's message again after it.
    assert line.endswith("check [database] connection and that the "
                         "database server is up"), line
    # Nova does not send it again: the operator must know which instance
    # on which host still holds its claim.
    assert VM in line and "'h1'" in line, line


@pytest.mark.databases("postgresql", "mysql")
def test_a_cast_sent_while_the_database_restarts_is_applied(
        make_deployment, database_server):
    """A delete_instance_info cast arriving while the database restarts
    was dropped after [scheduler] db_retries' ~1.5 s: nova does not send
    it again, so the deleted instance's confirmed claim was kept for
    ever. It must wait for the database (within [scheduler]
    db_outage_timeout) and release the claim."""
    deployment = _serving_a_claim_on_h1(make_deployment(), ttl=3600)
    engine = deployment.engine
    assert lifecycle.confirm(engine, [VM]) == 1
    # As systemctl stop does: a clean shutdown.
    database_server._shut_down()
    try:
        _cast(deployment, "delete_instance_info", host_name="h1",
              instance_uuid=VM)
        time.sleep(4)
    finally:
        database_server.start()
    engine.dispose()
    wait_until(lambda: deployment.allocations() == [],
               "the claim released")
    assert node_row(engine, "h1").memory_mb_used == 0
    log = deployment.server_log()
    assert "not applied" not in log, log
    assert continued_lines(log) == [], log
