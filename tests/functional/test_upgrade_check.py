"""``scheduler-status upgrade check`` against a real database and broker:
green when all is well, and a failure naming the problem when the schema
is behind, the broker is down or a filter is not installed."""
from __future__ import annotations

import json
import time

from scheduler.db import migration
from tests.fixtures._net import free_ports
from tests.functional.conftest import every_database
from tests.functional.conftest import run_command

BROKER_TIMEOUT = 2.0


def upgrade_check(deployment, *extra: str):
    result = run_command("status", "--config-file",
                         str(deployment.config_file), "--broker-timeout",
                         str(BROKER_TIMEOUT), *extra, "upgrade", "check",
                         "--json", check=False)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    report = json.loads(result.stdout)
    return result.returncode, {c["check"]: c for c in report["checks"]}


def test_all_green_on_a_synced_database_and_a_running_broker(
        make_deployment):
    code, checks = upgrade_check(make_deployment())
    assert code == 0, checks
    assert {name: c["result"] for name, c in checks.items()} == {
        "Database": 0, "Schema revision": 0, "Message broker": 0,
        "Configuration": 0, "Nova databases": 0, "Heat database": 0}
    assert checks["Nova databases"]["details"] == (
        "not used: hosts from this service's tables")
    assert checks["Heat database"]["details"] == (
        "not used: stacks placed with select_stack only")
    assert checks["Schema revision"]["details"] == \
        f"schema at revision {migration.head()} (head)"


@every_database
def test_schema_behind_head_is_a_failure_naming_both_revisions(
        make_deployment):
    deployment = make_deployment(sync_schema=False)
    # The revision just before head (the chain is 0004 -> 0006 -> 0005
    # -> 0007 -> 0008 -> 0009 -> 0010 -> 0011 -> 0012 -> 0013).
    migration.upgrade(deployment.engine, "0012")
    code, checks = upgrade_check(deployment)
    assert code == 2
    schema = checks["Schema revision"]
    assert schema["result"] == 2
    assert "is at revision 0012, head is 0013" in schema["details"]
    assert "scheduler-manage db sync" in schema["details"]
    assert checks["Database"]["result"] == 0


@every_database
def test_no_schema_is_a_failure(make_deployment):
    deployment = make_deployment(sync_schema=False)
    code, checks = upgrade_check(deployment)
    assert code == 2
    assert "db sync" in checks["Schema revision"]["details"]


def test_broker_down_is_a_failure_naming_the_broker_within_the_timeout(
        make_deployment):
    port, = free_ports(1)   # nothing listens there: a broker that is down
    deployment = make_deployment(
        transport_url=f"rabbit://guest:guest@127.0.0.1:{port}/")
    started = time.monotonic()
    code, checks = upgrade_check(deployment)
    elapsed = time.monotonic() - started
    assert code == 2
    details = checks["Message broker"]["details"]
    assert checks["Message broker"]["result"] == 2
    assert f"cannot reach the message broker at 127.0.0.1:{port} within " \
           f"{BROKER_TIMEOUT:g}s" in details
    # Bounded: the budget plus the command's start-up (generous, the
    # machine is shared), not oslo.messaging's retry-for-ever.
    assert elapsed < BROKER_TIMEOUT + 30, elapsed
    assert checks["Schema revision"]["result"] == 0


def test_filter_that_is_not_installed_is_a_failure_naming_it(
        make_deployment):
    deployment = make_deployment(
        filter_scheduler__enabled_filters="ComputeFilter,NoSuchFilter")
    code, checks = upgrade_check(deployment)
    assert code == 2
    details = checks["Configuration"]["details"]
    assert "no plugin named NoSuchFilter" in details
    assert "enabled_filters" in details


def test_text_output_and_version(make_deployment):
    deployment = make_deployment()
    result = run_command("status", "--config-file",
                         str(deployment.config_file), "upgrade", "check")
    assert "| Check: Message broker" in result.stdout
    assert "| Result: Success" in result.stdout
    assert run_command("status", "--version").stdout.strip()


def test_missing_config_file_is_one_line_and_255(tmp_path):
    result = run_command("status", "--config-file",
                         str(tmp_path / "nope.conf"), "upgrade", "check",
                         check=False)
    assert result.returncode == 255
    assert result.stderr == (
        f"ERROR: configuration file {tmp_path}/nope.conf not found; pass "
        f"--config-file with the path of an existing file "
        f"(etc/scheduler/scheduler.conf.sample is a template)\n")
