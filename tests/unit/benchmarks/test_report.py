"""Which bus row a row's ratio is taken against."""
from __future__ import annotations

from benchmarks import report
from benchmarks.timing import Row


def test_an_end_to_end_row_is_compared_with_the_echo_it_took_turns_with():
    assert report.bus_row("select_c1_postgresql", "latency") == \
        "echo_c1_postgresql"
    assert report.bus_row("select_c8", "throughput") == "echo_c8"
    assert report.bus_row("ping_c1_mysql", "latency") == "echo_c1_mysql"
    assert report.bus_row("echo_c8_mysql", "throughput") == "echo_c8_mysql"
    assert report.bus_row("decide", "latency") == "echo_c1"
    assert report.bus_row("claim_c8_sqlite", "claims") is None


def _row(measure: str, samples_ms: list[float], cpu_s: float) -> Row:
    return Row(measure, 100, [v / 1000 for v in samples_ms],
               server_cpu=cpu_s)


def test_ratios_beside_another_database_use_that_databases_echo():
    rows = [_row("echo_c1", [1.0] * 3, 0.003),
            _row("select_c1", [2.0] * 3, 0.006),
            _row("echo_c1_postgresql", [2.0] * 3, 0.003),
            _row("select_c1_postgresql", [3.0] * 3, 0.009)]
    by = {s["measure"]: s for s in report.summarize(rows)}
    assert by["select_c1"]["bus_ratio"] == 2.0
    assert by["select_c1_postgresql"]["bus_ratio"] == 1.5
    assert by["select_c1_postgresql"]["cpu_bus_ratio"] == 3.0
    assert by["echo_c1_postgresql"]["bus_ratio"] == 1.0
