"""benchmarks/run.py --quick runs end to end: it starts its own RabbitMQ,
PostgreSQL and MariaDB, measures every row, prints the table and writes the JSON and the
PNG. Timings are never asserted; only that every row was measured."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
import subprocess
import sys

import pytest

from scheduler.trace import STAGES
from tests.fixtures.availability import require
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer

ROOT = Path(__file__).resolve().parents[2]
MEASURES = ["refresh_nothing", "refresh_changed", "refresh_full", "decide",
            "claim_sqlite", "claim_postgresql", "claim_mysql",
            *(f"claim_c8{batched}_{kind}" for batched in ("", "_batched")
              for kind in ("sqlite", "postgresql", "mysql")),
            *(f"{measure}_c{concurrency}{kind}" for concurrency in (1, 8)
              for kind in ("", "_postgresql", "_mysql")
              for measure in ("echo", "select")),
            *(f"ping_c1{kind}" for kind in ("", "_postgresql", "_mysql"))]


def _require(*servers) -> None:
    """A benchmark starts its own servers and draws with matplotlib: fail
    under CI (skip elsewhere) when one is missing."""
    for server in servers:
        why = server.unavailable_reason()
        if why:
            require(server.__name__.removesuffix("Server"), why)
    if importlib.util.find_spec("matplotlib") is None:
        require("matplotlib", "not installed "
                "(pip install -r benchmarks/requirements.txt)")


def test_quick_benchmark_runs(tmp_path):
    _require(RabbitMQServer, PostgreSQLServer, MariaDBServer)
    out = tmp_path / "results"

    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick",
         # Every row measured is what counts here, not how well.
         "--budget", "0.5", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    table = (out / "table.txt").read_text()
    assert "median ms" in result.stdout and "p99 ms" in result.stdout
    for label in ("refresh, nothing changed", "claim, PostgreSQL",
                  "claim, MariaDB", "RPC select_destinations, c1, MariaDB",
                  "bus: echo call, concurrency 1", "RPC ping, concurrency 1",
                  "8 threads claiming, MariaDB, group commit",
                  "RPC select_destinations, concurrency 8"):
        assert label in result.stdout
        assert label in table
    assert (out / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = json.loads((out / "results.json").read_text())["rows"]
    measured = {(r["measure"], r["hosts"]) for r in rows if r["n"] > 0}
    sizes = sorted({r["hosts"] for r in rows})
    assert len(sizes) >= 2
    for measure in MEASURES:
        for hosts in sizes:
            assert (measure, hosts) in measured, (measure, hosts)
    # The select rows' time, split by the servers' own histograms: the
    # handler ran inside the round trip, and its stages inside it.
    assert "Mean ms per select_destinations" in table
    for row in rows:
        if row["measure"].startswith("select_"):
            split = row["service_split_ms"]
            assert 0 < split["service"] < row["mean_ms"], row["measure"]
            assert sum(split[stage] for stage in STAGES) <= \
                split["service"], row["measure"]
            assert split["claim"] > 0, row["measure"]


@pytest.mark.parametrize("layout", [[], ["--servers"]],
                         ids=["workers of one server", "one server each"])
def test_race_benchmark_runs_and_never_overcommits(tmp_path, layout):
    """benchmarks/race.py on a small grid: every cell measured, the lost
    races counted from the servers' logs, and the audit clean."""
    _require(RabbitMQServer, PostgreSQLServer)
    out = tmp_path / "results"

    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "race.py"),
         "--hosts", "100", "--processes", "1,2", "--fill", "60",
         "--requests", "40", "--budget", "5", "--concurrency", "4",
         "--set", "filter_scheduler.host_subset_size=1", *layout,
         "--label", "smoke", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "lost/placed" in (out / "race-smoke.txt").read_text()
    assert (out / "race.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cells = json.loads((out / "race-smoke.json").read_text())["cells"]
    assert [(c["fill"], c["processes"], c["servers"]) for c in cells] == \
        [(60, 1, bool(layout)), (60, 2, bool(layout))]
    # With one best host the two processes keep choosing the same node:
    # their lost races show in the count, whichever server logged them.
    assert cells[1]["lost"] > 0, cells
    for c in cells:
        assert not c["error"] and c["placements"] > 0, c
        assert c["overcommits"] == 0 and c["mismatches"] == 0, c
        assert 0.55 <= c["fill_before"] <= 0.65, c
        assert c["weight_gap"] == 0.0, c     # host_subset_size 1: the best


def test_nova_source_benchmark_runs(tmp_path, nova_python):
    """benchmarks/nova_source.py --quick: nova's cells built and filled,
    the sync timed, both servers measured at both concurrencies, the
    ratios printed. Timings are never asserted."""
    _require(RabbitMQServer, PostgreSQLServer)

    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "nova_source.py"),
         "--quick", "--budget", "0.5"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    lines = {line.split("  ")[0]: line.split()
             for line in result.stdout.splitlines()}
    for concurrency in (1, 8):
        for source in ("own schema", "nova source, 2 cells"):
            row = lines[f"{source}, c{concurrency}"]
            assert int(row[-6]) > 0, row               # n: calls placed
        assert f"nova / own, c{concurrency}" in lines
    assert "first read, in process:" in result.stdout
    assert "a cycle, n=3: median" in result.stdout
    assert "in the server, beside the rows:" in result.stdout
    # Every call placed its instance: no row has a note of failures.
    assert "failed, first" not in result.stdout
