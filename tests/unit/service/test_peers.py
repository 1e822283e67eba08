"""scheduler.service.peers on a real SQLite database: servers on one topic report
in ``services`` and find their place among the live ones; compute hosts
never see them."""
from __future__ import annotations

import datetime

import sqlalchemy as sa

from scheduler.hosts import liveness
from scheduler.service import peers
from scheduler.db import clock
from scheduler.db import compute
from scheduler.db import models
from tests.unit.fakes import node

TOPIC = "scheduler"


def rows(engine):
    s = models.services
    with engine.connect() as conn:
        return conn.execute(sa.select(s).where(
            s.c.binary == peers.SCHEDULER_BINARY).order_by(s.c.host)).all()


def age(engine, host: str, seconds: int) -> None:
    """Make ``host``'s last heartbeat ``seconds`` old."""
    s = models.services
    with engine.begin() as conn:
        then = clock.db_time(conn) - datetime.timedelta(seconds=seconds)
        conn.execute(s.update().where(s.c.host == host).values(
            last_seen_up=then, updated_at=then, created_at=then))


def test_the_first_report_creates_the_row_and_later_ones_beat(engine):
    peers.report(engine, "sched-a", TOPIC)
    peers.report(engine, "sched-a", TOPIC)
    [row] = rows(engine)
    assert (row.host, row.topic, row.report_count) == ("sched-a", TOPIC, 2)
    assert row.last_seen_up is not None and row.deleted == 0


def test_a_sibling_worker_creating_the_row_first_is_no_error(engine):
    """Every worker of a server reports at start: another may create the
    row between this one's UPDATE (no row yet) and its INSERT."""
    raced = []

    def sibling_first(conn, cursor, statement, *args):
        if statement.startswith("INSERT INTO services") and not raced:
            raced.append(True)
            peers.report(engine, "sched-a", TOPIC)

    sa.event.listen(engine, "before_cursor_execute", sibling_first)
    peers.report(engine, "sched-a", TOPIC)
    assert raced
    [row] = rows(engine)
    assert (row.host, row.report_count) == ("sched-a", 1)


def test_servers_up_on_a_topic_are_placed_in_host_order(engine):
    for host in ("sched-c", "sched-a", "sched-b"):
        peers.report(engine, host, TOPIC)
    peers.report(engine, "elsewhere", "another-topic")
    assert [peers.place(engine, h, TOPIC, 60)
            for h in ("sched-a", "sched-b", "sched-c")] == \
        [(0, 3), (1, 3), (2, 3)]
    assert peers.place(engine, "elsewhere", "another-topic", 60) == (0, 1)


def test_a_server_that_stopped_reporting_leaves_the_count(engine):
    for host in ("sched-a", "sched-b"):
        peers.report(engine, host, TOPIC)
    age(engine, "sched-a", 120)
    assert peers.place(engine, "sched-b", TOPIC, 60) == (0, 1)
    # ...and one that is not up itself behaves as if alone.
    assert peers.place(engine, "sched-a", TOPIC, 60) == (0, 1)
    # The same rule as for computes decides.
    assert liveness.is_up(False, 120, 60) is False


def test_scheduler_rows_are_not_hosts(engine, register):
    # An all-in-one machine: a compute and a scheduler on one host.
    register(node("aio-1"))
    age(engine, "aio-1", 120)           # the compute stopped beating
    peers.report(engine, "aio-1", TOPIC)  # the scheduler beats
    with engine.connect() as conn:
        assert [r.host for r in compute.compute_services(conn)] == ["aio-1"]
        assert liveness.down_hosts(conn, 60) == {"aio-1"}
    assert peers.place(engine, "aio-1", TOPIC, 60) == (0, 1)


def test_a_heartbeat_reports_this_server_and_reads_its_place(conf, engine):
    """What a worker hands its endpoint every report_interval: this
    server's row beaten on its topic, then its place among those up."""
    conf.set_override("host", "sched-b")
    peers.report(engine, "sched-a", conf.scheduler.topic)
    assert peers.heartbeat(conf, engine) == (1, 2)
    assert peers.heartbeat(conf, engine) == (1, 2)
    [a, b] = rows(engine)
    assert (b.host, b.topic, b.report_count) == (
        "sched-b", conf.scheduler.topic, 2)
    assert a.report_count == 1
