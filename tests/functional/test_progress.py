"""Long work reports progress on stderr when asked (``--progress``) or
when stderr is a terminal, and stays silent in a pipe; stdout keeps the
result (JSON included)."""
from __future__ import annotations

import json
import re

from tests.functional.conftest import run_command

NODES = 3000


def progress_lines(stderr: str, what: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(what)]


def test_fleet_audit_and_db_sync_report_progress_when_asked(
        make_deployment):
    deployment = make_deployment(sync_schema=False)
    config = str(deployment.config_file)

    result = run_command("manage", "--config-file", config, "db", "sync",
                         "--progress")
    steps = progress_lines(result.stderr, "db sync: applied ")
    assert len(steps) >= 2, result.stderr
    assert re.fullmatch(r"db sync: applied \w+ \((\d+)/\1\)", steps[-1])
    assert result.stdout.startswith("database at revision ")

    result = run_command("fleet", "--config-file", config, "--nodes",
                         str(NODES), "--once", "--progress")
    lines = progress_lines(result.stderr, "fleet: registering new nodes")
    assert lines[0] == f"fleet: registering new nodes 0/{NODES} (0%)"
    assert lines[-1] == f"fleet: registering new nodes {NODES}/{NODES} " \
                        f"(100%)"

    result = run_command("manage", "--config-file", config, "allocations",
                         "audit", "--json", "--progress")
    lines = progress_lines(result.stderr, "audit: checked nodes")
    assert lines[0] == f"audit: checked nodes 0/{NODES} (0%)"
    assert lines[-1] == f"audit: checked nodes {NODES}/{NODES} (100%)"
    assert json.loads(result.stdout)["problems"] == []


def test_no_progress_in_a_pipe_unless_asked(make_deployment):
    deployment = make_deployment(sync_schema=False)
    config = str(deployment.config_file)
    result = run_command("manage", "--config-file", config, "db", "sync")
    assert result.stderr == ""
    result = run_command("fleet", "--config-file", config, "--nodes",
                         str(NODES), "--once")
    assert result.stderr == ""
    result = run_command("manage", "--config-file", config, "allocations",
                         "audit", "--progress", "--no-progress")
    assert result.stderr == ""
