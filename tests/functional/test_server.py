"""scheduler-server as a daemon: start-up checks, workers, shutdown."""
from __future__ import annotations

import subprocess
import sys
import time

import oslo_messaging as messaging

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}


def _start_and_wait(deployment) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scheduler.cmd.server", "--config-file",
         str(deployment.config_file)], capture_output=True, text=True,
        timeout=60)


def test_unknown_driver_stops_startup_naming_option_and_choices(
        make_deployment):
    deployment = make_deployment(scheduler__driver="fancy_scheduler")
    result = _start_and_wait(deployment)
    assert result.returncode == 1
    assert ("ERROR: [scheduler] driver: no driver named 'fancy_scheduler' in "
            "namespace 'scheduler.driver'; available: caching_scheduler, "
            "chance_scheduler, filter_scheduler") in result.stderr


def test_unknown_filter_stops_startup(make_deployment):
    deployment = make_deployment(
        filter_scheduler__enabled_filters="ComputeFilter,NoSuchFilter")
    result = _start_and_wait(deployment)
    assert result.returncode == 1
    assert "[filter_scheduler] enabled_filters: no plugin named " \
        "NoSuchFilter" in result.stderr


def test_missing_schema_stops_startup(make_deployment):
    deployment = make_deployment(sync_schema=False)
    result = _start_and_wait(deployment)
    assert result.returncode == 1
    assert "run 'scheduler-manage db sync' first" in result.stderr


def test_two_workers_both_serve_and_stop_cleanly_on_sigterm(
        make_deployment):
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(20)
    proc = deployment.start_server()
    # Serving begins with the first worker that consumes; the second may
    # still be loading its host table.
    deadline = time.monotonic() + 30
    while "Ready: 2/2 workers consuming" not in deployment.server_log():
        assert time.monotonic() < deadline, deployment.server_log()[-3000:]
        time.sleep(0.2)

    results = [deployment.api.select_destinations({}, {"flavor": FLAVOR})
               for _ in range(20)]
    assert len(deployment.allocations()) == 20
    log = deployment.server_log()
    assert log.count("Scheduler worker consuming topic") == 2
    # alembic sets up its plugins to read the schema's revision, at INFO.
    assert "alembic.runtime.plugins" not in log
    assert len({d["uuid"] for r in results for d in r}) == 20

    deployment.stop_servers()
    assert proc.returncode == 0
    assert "WARNING" not in deployment.server_log()
    probe = type(deployment.api)(deployment.conf,
                                 transport=deployment.api.transport,
                                 timeout=2)
    try:
        probe.ping({})
        raise AssertionError("a stopped server answered")
    except messaging.MessagingTimeout:
        pass
