"""A scheduler server keeps its ``services`` row alive, shows in
``scheduler-manage service list`` as up, and a database that goes away
costs one line per failed heartbeat or periodic task, never a traceback."""
from __future__ import annotations

import json

import sqlalchemy as sa

from scheduler.service import peers
from scheduler.db import models
from tests.functional.waits import wait_until


def scheduler_rows(deployment) -> list[dict]:
    services = json.loads(deployment.manage("service", "list",
                                            "--json").stdout)
    return [s for s in services if s["binary"] == "scheduler-server"]


def report_count(deployment) -> int:
    services = models.services
    with deployment.engine.connect() as conn:
        return conn.execute(sa.select(services.c.report_count).where(
            services.c.binary == peers.SCHEDULER_BINARY)).scalar_one()


def rename(deployment, prefix: str) -> None:
    """Give the services and allocations tables ``prefix`` (or take the
    one they have away)."""
    with deployment.engine.begin() as conn:
        for table in ("services", "allocations"):
            old, new = (("away_" + table, table) if not prefix
                        else (table, prefix + table))
            conn.execute(sa.text(f"ALTER TABLE {old} RENAME TO {new}"))


def failures(deployment) -> list[str] | None:
    """The worker's failure lines, once both loops have logged one."""
    lines = [line for line in deployment.server_log().splitlines()
             if "WARNING" in line and "Worker 0 could not" in line]
    loops = {"could not report to the services table",
             "could not run its periodic tasks"}
    if all(any(loop in line for line in lines) for loop in loops):
        return lines
    return None


def test_a_server_reports_through_a_database_outage(make_deployment):
    deployment = make_deployment(report_interval=1,
                                 scheduler__periodic_task_interval=1)
    deployment.fleet(2)
    deployment.start_server(name="sched-a")
    [row] = scheduler_rows(deployment)
    assert (row["host"], row["state"], row["status"]) == \
        ("sched-a", "up", "enabled")

    # The tables it writes go away (renamed through SQL, so SQLite's
    # write-ahead log stays with its database), then come back.
    rename(deployment, "away_")
    try:
        lines = wait_until(lambda: failures(deployment), "no failure logged")
    finally:
        rename(deployment, "")
    for line in lines:
        assert line.endswith("; run 'scheduler-manage db sync' first"), line
    log = deployment.server_log()
    assert "Traceback" not in log
    assert "[SQL:" not in log

    # Back: it beats again and still places.
    beats = report_count(deployment)
    wait_until(lambda: report_count(deployment) > beats, "no heartbeat")
    flavor = {"memory_mb": 512, "vcpus": 1, "root_gb": 1}
    assert len(deployment.api.select_destinations({}, {"flavor": flavor})) \
        == 1
