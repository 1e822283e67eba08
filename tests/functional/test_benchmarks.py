"""benchmarks/run.py --quick runs end to end: it starts its own RabbitMQ,
PostgreSQL and MariaDB, measures every row, prints the table and writes the JSON and the
PNG. Timings are never asserted; only that every row was measured."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
import subprocess
import sys

from tests.fixtures.availability import require
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer

ROOT = Path(__file__).resolve().parents[2]
MEASURES = ["refresh_nothing", "refresh_changed", "refresh_full", "decide",
            "claim_sqlite", "claim_postgresql", "claim_mysql", "echo_c1",
            "select_c1", "select_c1_postgresql", "select_c1_mysql",
            "echo_c8", "select_c8", "select_c8_postgresql", "select_c8_mysql"]


def test_quick_benchmark_runs(tmp_path):
    for name, server in (("RabbitMQ", RabbitMQServer),
                         ("PostgreSQL", PostgreSQLServer),
                         ("MariaDB", MariaDBServer)):
        why = server.unavailable_reason()
        if why:
            require(name, why)
    if importlib.util.find_spec("matplotlib") is None:
        require("matplotlib", "not installed "
                "(pip install -r benchmarks/requirements.txt)")
    out = tmp_path / "results"

    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    table = (out / "table.txt").read_text()
    assert "median ms" in result.stdout and "p99 ms" in result.stdout
    for label in ("refresh, nothing changed", "claim, PostgreSQL",
                  "claim, MariaDB", "RPC select_destinations, c1, MariaDB",
                  "bus: echo call, concurrency 1",
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
