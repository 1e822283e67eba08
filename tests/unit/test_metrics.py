"""scheduler.metrics: the instruments and the exposition, in process and
across real forked processes (multiprocess mode)."""
from __future__ import annotations

import json
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

from scheduler import metrics
from scheduler import trace


def samples() -> dict[tuple[str, frozenset], float]:
    body, content_type = metrics.render()
    assert content_type.startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(body.decode())
            for s in family.samples}


def test_a_request_counts_its_outcome_stages_and_refusal_filter():
    key = ("scheduler_requests_total", frozenset(
        {"api": "scheduler", "method": "unit_select",
         "outcome": "no_valid_host"}.items()))
    refusals = ("scheduler_refusals_total",
                frozenset({"filter": "UnitFilter"}.items()))
    before = samples()
    t = trace.begin("unit_select")
    trace.add(trace.FILTER, 0.002)
    trace.refused("UnitFilter")
    trace.end()
    metrics.record_request("scheduler", "no_valid_host", t)
    after = samples()
    assert after[key] - before.get(key, 0) == 1
    assert after[refusals] - before.get(refusals, 0) == 1
    stage = ("scheduler_stage_duration_seconds_count",
             frozenset({"stage": "filter"}.items()))
    assert after[stage] - before.get(stage, 0) == 1


def test_drains_count_their_moves_by_action():
    key = ("scheduler_drain_moves_total",
           frozenset({"action": "applied"}.items()))
    before = samples().get(key, 0)
    metrics.drain("applied", 40)
    metrics.drain("applied", 0)      # an empty host drains too
    assert samples()[key] - before == 40


def test_conflict_kinds_show_from_zero_and_the_table_has_an_age():
    metrics.host_table(7)
    now = samples()
    for kind in metrics.CONFLICT_KINDS:
        assert ("scheduler_claim_conflicts_total",
                frozenset({"kind": kind}.items())) in now
    assert now[("scheduler_host_table_hosts", frozenset())] == 7
    age = now[("scheduler_host_table_refresh_age_seconds", frozenset())]
    assert 0 <= age < 60


# Runs in a fresh interpreter: multiprocess mode changes prometheus_client
# for the whole process.
_MULTIPROCESS = """
import json, os, sys
from prometheus_client.parser import text_string_to_metric_families
from scheduler import metrics
from scheduler import trace

def render():
    body, _ = metrics.render()
    return {f"{s.name}{sorted(s.labels.items())}": s.value
            for f in text_string_to_metric_families(body.decode())
            for s in f.samples}

path = metrics.use_multiprocess()
metrics.db_transient_error()     # the main process records, holds no table
go_r, go_w = os.pipe()
done_r, done_w = os.pipe()
pids = []
for size in (10, 20):
    pid = os.fork()
    if pid == 0:
        for _ in range(3):
            t = trace.begin("select_destinations")
            trace.end()
            metrics.record_request("scheduler", "ok", t)
        metrics.host_table(size)
        os.write(done_w, b"x")
        os.read(go_r, 1)          # live until told to exit
        os._exit(0)
    pids.append(pid)
os.read(done_r, 1); os.read(done_r, 1)
live = render()
os.write(go_w, b"xx")
for pid in pids:
    os.waitpid(pid, 0)
dead = render()
metrics.cleanup()
print(json.dumps({"pids": pids, "live": live, "dead": dead,
                  "removed": not os.path.exists(path)}))
"""


def test_multiprocess_sums_counters_and_keeps_gauges_per_live_worker():
    result = subprocess.run([sys.executable, "-c", _MULTIPROCESS],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    ok = ("scheduler_requests_total[('api', 'scheduler'), "
          "('method', 'select_destinations'), ('outcome', 'ok')]")
    assert out["live"][ok] == 6
    assert out["live"]["scheduler_db_transient_errors_total[]"] == 1
    tables = {k: v for k, v in out["live"].items()
              if k.startswith("scheduler_host_table_hosts[")}
    assert tables == {
        f"scheduler_host_table_hosts[('pid', '{pid}')]": size
        for pid, size in zip(out["pids"], (10, 20))}
    # The workers exited: their counts stay, their host tables go.
    assert out["dead"][ok] == 6
    assert not any(k.startswith("scheduler_host_table")
                   for k in out["dead"])
    assert out["removed"]
