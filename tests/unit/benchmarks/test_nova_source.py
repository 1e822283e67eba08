"""The nova-source benchmark's helpers: nova's computes heartbeating spread
evenly over the interval, and the table's nova/own ratios."""
from __future__ import annotations

import threading

import sqlalchemy as sa

from benchmarks import nova_heartbeat
from benchmarks import nova_source
from benchmarks.timing import Row


def test_every_service_beats_once_per_round_in_even_slices():
    for count, ticks in ((10000, 100), (7, 3), (2, 5), (0, 4)):
        parts = nova_heartbeat.slices(count, ticks)
        covered = [i for part in parts for i in range(count)[part]]
        assert covered == list(range(count))
        sizes = {len(range(count)[part]) for part in parts}
        assert max(sizes) - min(sizes) <= 1


def test_heartbeats_write_what_nova_servicegroup_writes(tmp_path):
    url = f"sqlite:///{tmp_path}/cell.sqlite"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE services (id INTEGER PRIMARY KEY, binary TEXT, "
            "deleted INTEGER, report_count INTEGER, last_seen_up DATETIME, "
            "updated_at DATETIME)")
        conn.exec_driver_sql(
            "INSERT INTO services VALUES (1, 'nova-compute', 0, 0, NULL, "
            "NULL), (2, 'nova-compute', 0, 0, NULL, NULL), "
            "(3, 'nova-conductor', 0, 0, NULL, NULL), "
            "(4, 'nova-compute', 4, 0, NULL, NULL)")
    stop = threading.Event()
    # One beat of everyone at start, then 2 ticks (a service each) per
    # 0.2 s round: stopped after at least one whole round.
    threading.Timer(0.5, stop.set).start()

    nova_heartbeat.run([url], interval=0.2, tick=0.1, stop=stop)

    with engine.connect() as conn:
        rows = {r.id: r for r in conn.exec_driver_sql(
            "SELECT id, report_count, last_seen_up, updated_at "
            "FROM services")}
    engine.dispose()
    for live in (1, 2):
        assert rows[live].report_count >= 2
        assert rows[live].last_seen_up is not None
        assert rows[live].updated_at == rows[live].last_seen_up
    # Not a live compute: nova's computes do not beat for it.
    assert rows[3].report_count == rows[4].report_count == 0


def _row(measure: str, samples_ms: list[float], wall: float | None = None,
         cpu_s: float = 0.0) -> Row:
    return Row(measure, 100, [v / 1000 for v in samples_ms],
               concurrency=8 if wall else 1, wall=wall, server_cpu=cpu_s,
               service_split={"refresh": 0.001})


def test_the_table_puts_nova_beside_own_with_their_ratio():
    rows = [_row("select_c1_own", [2.0] * 4, cpu_s=0.008),
            _row("select_c1_nova", [3.0] * 4, cpu_s=0.012),
            _row("select_c8_own", [8.0] * 4, wall=0.02),
            _row("select_c8_nova", [8.0] * 4, wall=0.04)]
    sync = nova_source.SyncTimes(2.5, 2.0, [0.05, 0.07], [0.04, 0.05], 2.7,
                                 server_cycles=30, server_mean=0.08)

    text = nova_source.table(sync, rows, 10000)

    lines = {line.split("  ")[0]: line.split() for line in text.splitlines()}
    # p50, p99, (req/s), cpu ms, refresh ms: nova's over own's.
    assert lines["nova / own, c1"][-5:] == \
        ["1.50×", "1.50×", "—", "1.50×", "1.00×"]
    # Half the requests per second.
    assert lines["nova / own, c8"][-5:] == \
        ["1.00×", "1.00×", "0.50×", "—", "1.00×"]
    assert "first read, in process: 2.50 s (2.00 s CPU); in the server " \
        "at start: 2.70 s" in text
    assert "a cycle, n=2: median 60.0 ms (45.0 ms CPU)" in text
    assert "in the server, beside the rows: 30 cycles, mean 80.0 ms" in text
