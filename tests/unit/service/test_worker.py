"""A scheduler-server worker process."""
from __future__ import annotations

import logging
import types

import pytest

from scheduler import exception
from scheduler.decide.chance import ChanceScheduler
from scheduler.service import worker as service_worker


def test_a_chance_workers_reload_line_names_no_weigher(
        conf, engine, host_manager, caplog):
    """The chance driver weighs nothing: its 'applied the configuration'
    line names the filters it runs and no weigher, not the configured
    ones it ignores."""
    conf.set_override("driver", "chance_scheduler", "scheduler")
    worker = service_worker.SchedulerWorker(1, conf, channel=None)
    worker._manager = types.SimpleNamespace(
        driver=ChanceScheduler(conf, host_manager, engine))
    with caplog.at_level(logging.INFO, logger="scheduler.service.worker"):
        worker.reload()
    [line] = [r.getMessage() for r in caplog.records
              if "applied the configuration" in r.getMessage()]
    assert line == ("Worker 1 applied the configuration: filters "
                    "RetryFilter, ComputeFilter, RamFilter, CoreFilter, "
                    "DiskFilter, ServerGroupAffinityFilter, "
                    "ServerGroupAntiAffinityFilter; weighers none")


#: What a SIGHUP's new configuration can fail with: a bug (its
#: traceback, for a developer) or the operator's bad value (one line).
RELOAD_ERRORS = pytest.mark.parametrize("error, traceback", [
    (KeyError("weighers"), True),
    (exception.ConfigError("[filter_scheduler] weighers: no such weigher"),
     False),
], ids=["bug", "bad value"])


@RELOAD_ERRORS
def test_a_workers_failed_reload_logs_a_bug_with_its_traceback(
        conf, caplog, error, traceback):
    def reload():
        raise error
    worker = service_worker.SchedulerWorker(1, conf, channel=None)
    worker._manager = types.SimpleNamespace(
        driver=types.SimpleNamespace(reload=reload))
    with caplog.at_level(logging.INFO, logger="scheduler.service.worker"):
        worker.reload()
    [record] = caplog.records
    assert (record.levelname, record.exc_info is not None) == (
        "ERROR", traceback)
    assert "keeps its previous filters" in record.getMessage()


def test_a_workers_refused_reload_is_one_line_without_the_exception(
        conf, oslo_log_lines):
    """oslo.log appended the exception in flight (its type and text) to
    the line, logged inside the except clause."""
    def reload():
        raise exception.ConfigError("[filter_scheduler] weighers: no such "
                                    "weigher")
    worker = service_worker.SchedulerWorker(1, conf, channel=None)
    worker._manager = types.SimpleNamespace(
        driver=types.SimpleNamespace(reload=reload))
    lines = oslo_log_lines("scheduler.service.worker")
    worker.reload()
    [line] = lines
    assert line.endswith(" [-] Worker 1 keeps its previous filters and "
                         "weighers: [filter_scheduler] weighers: no such "
                         "weigher"), line
