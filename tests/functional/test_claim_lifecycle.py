"""Claims over their life: confirmed ones stay, unconfirmed ones expire by
the database's clock, and a database restart loses nothing."""
from __future__ import annotations

import threading
import time
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from scheduler.admin import audit
from scheduler.hosts import capacity
from scheduler.claims import consume
from scheduler.db import allocations
from scheduler.hosts.planned import Claim
from scheduler import exception
from scheduler.sim import fleet
from scheduler.db import models
from scheduler.nova import casts
from tests.functional.conftest import continued_lines
from tests.functional.conftest import every_database
from tests.functional.conftest import freeze
from tests.functional.conftest import node
from tests.functional.conftest import thaw
from tests.functional.waits import lock_waits
from tests.functional.waits import wait_until
from tests.unit.fakes import node_row
from tests.unit.fakes import recreate_node

pytestmark = every_database

FLAVOR = {"memory_mb": 2048, "vcpus": 1, "root_gb": 10}


def test_unconfirmed_claims_expire_and_confirmed_ones_stay(make_deployment):
    deployment = make_deployment(scheduler__unconfirmed_claim_ttl=2,
                                 scheduler__periodic_task_interval=1)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()

    kept = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    stray = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert deployment.api.confirm({}, [kept[0]["uuid"]]) == 1
    with pytest.raises(exception.NoValidHost):
        deployment.api.select_destinations({}, {"flavor": FLAVOR})

    wait_until(lambda: len(deployment.allocations()) == 1,
               "the stray claim expiring", timeout=20)

    assert [a.consumer_uuid for a in deployment.allocations()] == \
        [kept[0]["uuid"]]
    assert deployment.nodes()["only"].memory_mb_used == 2048
    assert deployment.api.confirm({}, [stray[0]["uuid"]]) == 0
    again = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert again[0]["host"] == "only"


def test_a_re_send_answered_from_a_provisional_claim_restarts_its_ttl(
        make_deployment):
    """A re-sent request (its reply was lost) hands its provisional claim
    out again: the caller has the whole TTL from that answer to build, not
    what was left of the first one's."""
    deployment = make_deployment(scheduler__unconfirmed_claim_ttl=3600)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()
    spec = {"instance_uuids": [str(uuidlib.uuid4())], "flavor": FLAVOR}
    deployment.api.select_destinations({}, spec)
    # Most of the TTL has passed since the first answer.
    first = deployment.age_claims(3500)

    again = deployment.api.select_destinations({}, spec)

    assert [d["uuid"] for d in again] == spec["instance_uuids"]
    [claim] = deployment.allocations()
    assert claim.expires_at >= first


@pytest.mark.databases("postgresql", "mysql")
def test_service_keeps_serving_across_a_database_restart(
        make_deployment, database_server):
    """Database servers only: SQLite has no server to restart."""
    deployment = make_deployment()
    deployment.fleet(10)
    deployment.start_server()
    first = deployment.api.select_destinations({}, {"flavor": FLAVOR})

    database_server.restart()
    deployment.heartbeat()

    second = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert {a.consumer_uuid for a in deployment.allocations()} == {
        first[0]["uuid"], second[0]["uuid"]}
    audited = deployment.manage("allocations", "audit", check=False)
    assert audited.returncode == 0, audited.stdout


def test_a_claim_behind_a_lock_held_elsewhere_gives_up_in_one_line(
        make_deployment):
    """A transaction left open on the node's row (an operator's manual fix
    not committed) holds every claim on that node. The claim waits
    ``[scheduler] db_lock_timeout`` per try, not for ever (PostgreSQL's
    default), then the caller gets one line naming the lock; nothing is
    claimed, and the server places again once the lock is gone."""
    deployment = make_deployment(scheduler__db_lock_timeout=1,
                                 scheduler__db_retries=1)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()
    n = models.compute_nodes
    holder = deployment.engine.connect()
    holder.begin()
    holder.execute(n.update().values(generation=n.c.generation))
    try:
        with pytest.raises(exception.ServiceUnavailable,
                           match=r"lock.*\[scheduler\] db_lock_timeout"):
            deployment.api.select_destinations({}, {"flavor": FLAVOR})
    finally:
        holder.rollback()
        holder.close()
    assert deployment.allocations() == []

    placed = deployment.api.select_destinations({}, {"flavor": FLAVOR})

    assert placed[0]["host"] == "only"
    assert "Traceback" not in deployment.server_log()


@pytest.mark.databases("postgresql", "mysql")
def test_a_claim_cut_off_by_a_database_outage_leaves_no_usage_behind(
        make_deployment, database_server):
    """The planner puts a claim's usage in its table before claiming and
    takes it back if the claim fails. When the database is gone, it cannot
    read the node back: once the database returns, the node must still be
    as SQL has it (empty), not full of a claim that never was; and what
    failed is said in one line per record, the driver's multi-line text
    left out."""
    whole = {"memory_mb": 4096, "vcpus": 1, "root_gb": 10}
    # An outage longer than the claim waits for the database.
    deployment = make_deployment(scheduler__db_outage_timeout=2)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()
    warm = deployment.api.select_destinations({}, {"flavor": whole})
    assert deployment.api.release({}, [warm[0]["uuid"]]) == 1

    # Hold the node's row so the next claim waits in its UPDATE, then take
    # the database away under it.
    holder = deployment.engine.connect()
    holder.begin()
    holder.execute(sa.select(models.compute_nodes).with_for_update())
    outcome = {}

    def call():
        try:
            outcome["placed"] = deployment.api.select_destinations(
                {}, {"flavor": whole})
        except Exception as e:      # the outage's ServiceUnavailable
            outcome["error"] = e
    with lock_waits(deployment.engine) as waiting:
        caller = threading.Thread(target=call)
        caller.start()
        waiting(1)     # the claim, behind the holder
    database_server.kill()
    holder.invalidate()
    # The claim gives up (db_outage_timeout, then db_retries) while the
    # database is still away.
    caller.join(60)
    assert not caller.is_alive()
    database_server.start()
    assert "error" in outcome, outcome
    deployment.engine.dispose()
    deployment.heartbeat()
    assert deployment.allocations() == []

    again = deployment.api.select_destinations({}, {"flavor": whole})
    assert again[0]["host"] == "only"
    log = deployment.server_log()
    assert continued_lines(log) == [], log
    [line] = [line for line in log.splitlines()
              if "Could not read back nodes" in line]
    assert "check [database] connection" in line, line


@pytest.mark.databases("postgresql", "mysql")
def test_claims_expire_once_the_database_is_back_from_an_outage(
        make_deployment, database_server):
    """The expiry task fails while the database is away and carries on,
    once, when it returns: nothing released twice, nothing kept."""
    ttl = 4
    deployment = make_deployment(scheduler__unconfirmed_claim_ttl=ttl,
                                 scheduler__periodic_task_interval=1,
                                 scheduler__workers=2)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()
    stray = [deployment.api.select_destinations({}, {"flavor": FLAVOR})
             for _ in range(2)]
    assert len(deployment.allocations()) == 2
    database_server.kill()
    # The TTL runs out while the database is away. The condition is time
    # itself, and the database's clock cannot be asked: wait the TTL out
    # on this one.
    time.sleep(ttl)
    database_server.start()
    deployment.engine.dispose()
    wait_until(lambda: not deployment.allocations(),
               "the stray claims expiring")
    only = deployment.nodes()["only"]
    assert (only.memory_mb_used, only.vcpus_used) == (0, 0)
    assert [placed["host"] for [placed] in stray] == ["only", "only"]
    log = deployment.server_log()
    assert "Traceback" not in log, log
    deployment.heartbeat()
    again = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert again[0]["host"] == "only"


@pytest.mark.databases("postgresql", "mysql")
def test_calls_across_a_database_restart_lose_or_double_nothing(
        make_deployment, database_server):
    """Callers keep placing while the database restarts under two workers:
    every placement answered is claimed, once; usage equals the claims;
    and the workers place again afterwards."""
    deployment = make_deployment(scheduler__workers=2)
    deployment.add_nodes([node(f"n{i}", memory_mb=256 * 4096, vcpus=8,
                               local_gb=4096)
                          for i in range(4)])
    deployment.start_server()
    small = {"memory_mb": 256, "vcpus": 0, "root_gb": 1}
    placed, failed = [], []
    stop = threading.Event()

    def caller():
        while not stop.is_set():
            try:
                placed.extend(deployment.api.select_destinations(
                    {}, {"flavor": small}))
            except exception.NoValidHost:
                return
            except Exception as e:
                failed.append(e)
                time.sleep(0.2)
    callers = [threading.Thread(target=caller) for _ in range(4)]
    for t in callers:
        t.start()
    wait_until(lambda: len(placed) >= 8, "placing before the restart")
    before = len(placed)
    database_server.restart()
    # Placing again: a few more than were answered before the restart.
    wait_until(lambda: len(placed) >= before + 8,
               "placing after the restart", timeout=90)
    stop.set()
    for t in callers:
        t.join(120)
    assert not any(t.is_alive() for t in callers)
    assert 0 < before < len(placed)      # placing before and after
    claimed = {a.consumer_uuid for a in deployment.allocations()}
    assert {p["uuid"] for p in placed} <= claimed
    assert len(placed) == len({p["uuid"] for p in placed})
    deployment.engine.dispose()
    audited = deployment.manage("allocations", "audit", check=False)
    assert audited.returncode == 0, audited.stdout
    deployment.heartbeat()
    assert deployment.api.release({}, [p["uuid"] for p in placed[:4]]) == 4
    for _ in range(4):
        deployment.api.select_destinations({}, {"flavor": small})
    assert "Traceback" not in deployment.server_log()


VM = "abababab-0000-4000-8000-000000000001"


def test_a_claim_left_on_a_re_created_node_follows_its_instance(engine):
    """A compute node re-created under a new uuid (same host and name)
    while an instance holds a claim on the old one: the host's next
    instance list moves the claim to the live node, once, so the new node
    counts the instance and the books balance."""
    fleet.register(engine, [node("h1", vcpus=8, memory_mb=8192)])
    old = node_row(engine, "h1")
    consume.claim(engine, [Claim(VM, old.id, "h1", old.generation,
                                 1, 2048, 10)])
    recreate_node(engine, "h1")

    assert casts.listed(engine, {VM: "h1"}) == 1
    assert casts.listed(engine, {VM: "h1"}) == 0      # once
    new = node_row(engine, "h1")
    assert allocations.placements(engine, [VM])[VM].node_uuid == new.uuid
    assert (new.memory_mb_used, new.running_vms) == (2048, 1)
    assert audit.audit_allocations(engine, capacity.Ratios()) == []


@pytest.mark.databases("postgresql", "mysql")
def test_a_request_sent_while_the_database_restarts_is_placed_once(
        make_deployment, database_server):
    """A database restart (systemctl restart, a failover) takes seconds.
    A request arriving meanwhile waited only [scheduler] db_retries'
    ~1.5 s of backoff (its refresh not even that) and failed: nova puts
    the instance in ERROR. It must wait for the database, within
    [scheduler] db_outage_timeout, and be placed: one claim, counted
    once."""
    deployment = make_deployment()
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()
    warm = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert deployment.api.release({}, [warm[0]["uuid"]]) == 1
    vm = "cdcdcdcd-0000-4000-8000-000000000001"
    outcome = {}

    def call():
        try:
            outcome["placed"] = deployment.api.select_destinations(
                {}, {"flavor": FLAVOR, "instance_uuids": [vm]})
        except Exception as e:
            outcome["error"] = e
    # As systemctl stop does: a clean shutdown.
    database_server._shut_down()
    try:
        caller = threading.Thread(target=call)
        caller.start()
        # Still waiting after 2 s, past db_retries' ~1.5 s of backoff.
        caller.join(2)
        assert caller.is_alive(), outcome
        # The wait is the request's own: the server answers others.
        started = time.monotonic()
        deployment.api.ping({})
        assert time.monotonic() - started < 2
        caller.join(2)
        assert caller.is_alive(), outcome
    finally:
        database_server.start()
    caller.join(60)
    assert not caller.is_alive()
    assert "placed" in outcome, outcome
    assert [p["uuid"] for p in outcome["placed"]] == [vm]
    deployment.engine.dispose()
    [claim] = deployment.allocations()
    assert claim.consumer_uuid == vm
    only = deployment.nodes()["only"]
    assert (only.memory_mb_used, only.vcpus_used) == (2048, 1)
    log = deployment.server_log()
    assert continued_lines(log) == [], log
    assert "the database answered again after" in log, log


@pytest.mark.databases("postgresql", "mysql")
def test_requests_sent_during_a_long_outage_each_fail_within_the_window(
        make_deployment, database_server):
    """Requests arriving together while the database is away for longer
    than [scheduler] db_outage_timeout: each refresh waits in the host
    manager's one cycle, so the second request's window only began once
    the first had given up, the third's once the second had: the Nth
    caller was answered after N windows (nova's boots queued behind one
    another for minutes). Each must be answered ServiceUnavailable within
    one window (and db_retries' retries), having claimed nothing."""
    outage = 5
    deployment = make_deployment(scheduler__db_outage_timeout=outage)
    deployment.add_nodes([node("only", memory_mb=8192, vcpus=8)])
    deployment.start_server()
    warm = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert deployment.api.release({}, [warm[0]["uuid"]]) == 1
    outcomes: dict[int, tuple[float, Exception | None]] = {}

    def call(i: int) -> None:
        started = time.monotonic()
        try:
            vm = f"cdcdcdcd-0000-4000-8000-00000000010{i}"
            deployment.api.select_destinations(
                {}, {"flavor": FLAVOR, "instance_uuids": [vm]})
            error = None
        except Exception as e:
            error = e
        outcomes[i] = (time.monotonic() - started, error)
    database_server._shut_down()
    try:
        callers = [threading.Thread(target=call, args=(i,))
                   for i in range(3)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(90)
    finally:
        database_server.start()
    assert len(outcomes) == 3, outcomes
    # The window, then db_retries' 5 retries at 1 s, then for each request
    # queued behind another its own retries (~1.5 s of backoff, plus the
    # refused connections) once its window is spent: not another window.
    limit = outage + 5 + 3 * 2.5
    for elapsed, error in outcomes.values():
        assert isinstance(error, exception.ServiceUnavailable), outcomes
        assert elapsed < limit, outcomes
    deployment.engine.dispose()
    assert deployment.allocations() == []
    log = deployment.server_log()
    assert continued_lines(log) == [], log


@pytest.mark.databases("postgresql", "mysql")
def test_a_request_to_a_database_that_stops_answering_ends_in_one_line(
        make_deployment, database_server):
    """A database server that stops answering without closing its
    connections (frozen, or a partition that drops packets) left a
    statement waiting in recv() for ever: the request hung until the
    caller's RPC timeout and held a worker thread. One round trip waits
    at most [scheduler] db_lock_timeout plus a margin; then the database
    counts as unreachable, [scheduler] db_outage_timeout applies and the
    caller gets the one-line ServiceUnavailable naming the database. Once
    the server answers again the next request is placed and nothing is
    claimed twice."""
    deployment = make_deployment(scheduler__db_lock_timeout=1,
                                 scheduler__db_outage_timeout=2)
    deployment.add_nodes([node("only", memory_mb=4096, vcpus=4)])
    deployment.start_server()
    warm = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert deployment.api.release({}, [warm[0]["uuid"]]) == 1
    first = "cdcdcdcd-0000-4000-8000-000000000001"
    outcome = {}

    def call():
        try:
            outcome["placed"] = deployment.api.select_destinations(
                {}, {"flavor": FLAVOR, "instance_uuids": [first]})
        except Exception as e:
            outcome["error"] = e
    freeze(database_server)
    try:
        started = time.monotonic()
        caller = threading.Thread(target=call)
        caller.start()
        # Its round trip, 1 s + the margin, perhaps after the periodic
        # refresh's (which holds the host table meanwhile). db_outage_timeout
        # counts from the round trip's start, and a round trip that timed
        # out is not tried again past it (db_retries more of 6 s each).
        caller.join(40)
        took = time.monotonic() - started
    finally:
        thaw(database_server)
    caller.join(60)
    assert not caller.is_alive()
    assert took < 16, (took, outcome)
    error = outcome.get("error")
    assert isinstance(error, exception.ServiceUnavailable), outcome
    # The line (oslo.messaging appends the server's traceback to a remote
    # exception's text).
    line = str(error).splitlines()[0]
    assert line.startswith("cannot open database "), line
    assert "timed out" in line and line.endswith(
        "check [database] connection and that the database server is up"), \
        line

    second = "cdcdcdcd-0000-4000-8000-000000000002"
    placed = deployment.api.select_destinations(
        {}, {"flavor": FLAVOR, "instance_uuids": [second]})
    assert [p["uuid"] for p in placed] == [second]
    deployment.engine.dispose()
    held = {c.consumer_uuid for c in deployment.allocations()}
    assert second in held and held <= {first, second}, held
    only = deployment.nodes()["only"]
    assert (only.memory_mb_used, only.vcpus_used) == (
        2048 * len(held), len(held))
    log = deployment.server_log()
    assert continued_lines(log) == [], log
