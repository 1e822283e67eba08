"""scheduler-server's own setup."""
from __future__ import annotations

import logging
import types

import pytest

from scheduler import exception
from scheduler.cmd import server
from scheduler.decide.chance import ChanceScheduler


def test_a_lone_surrogate_in_a_log_file_line_is_escaped(tmp_path):
    """A ``[DEFAULT] log_file`` handler (and the one it reopens after a
    rotation) writes a lone surrogate as ``\\ud800``, not a Logging
    error."""
    path = tmp_path / "server.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    root = logging.getLogger()
    # The file alone, as a server's log_file: pytest's own handlers would
    # keep the surrogate in a report that pytest-xdist cannot send.
    others, root.handlers = root.handlers, [handler]
    try:
        server._escape_unencodable_in_logs()
        logging.getLogger("t").warning("refused: %s", "az\ud800")
        handler.close()                 # as WatchedFileHandler on rotation
        handler.stream = handler._open()
        logging.getLogger("t").warning("again: %s", "h\udfff")
    finally:
        root.handlers = others
        handler.close()
    assert path.read_text() == "refused: az\\ud800\nagain: h\\udfff\n"


def test_a_chance_workers_reload_line_names_no_weigher(
        conf, engine, host_manager, caplog):
    """The chance driver weighs nothing: its 'applied the configuration'
    line names the filters it runs and no weigher, not the configured
    ones it ignores."""
    conf.set_override("driver", "chance_scheduler", "scheduler")
    worker = server.SchedulerWorker(1, conf, channel=None)
    worker._manager = types.SimpleNamespace(
        driver=ChanceScheduler(conf, host_manager, engine))
    with caplog.at_level(logging.INFO, logger="scheduler.cmd.server"):
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
    worker = server.SchedulerWorker(1, conf, channel=None)
    worker._manager = types.SimpleNamespace(
        driver=types.SimpleNamespace(reload=reload))
    with caplog.at_level(logging.INFO, logger="scheduler.cmd.server"):
        worker.reload()
    [record] = caplog.records
    assert (record.levelname, record.exc_info is not None) == (
        "ERROR", traceback)
    assert "keeps its previous filters" in record.getMessage()


@RELOAD_ERRORS
def test_a_refused_sighup_logs_a_bug_with_its_traceback(
        conf, caplog, monkeypatch, error, traceback):
    def check_config(conf):
        raise error
    monkeypatch.setattr(server, "check_config", check_config)
    monkeypatch.setattr(server.sched_conf, "load", lambda argv: conf)
    supervisor = types.SimpleNamespace(argv=[], conf=conf)
    with caplog.at_level(logging.INFO, logger="scheduler.cmd.server"):
        server.Supervisor._reload(supervisor)
    [record] = caplog.records
    assert (record.levelname, record.exc_info is not None) == (
        "ERROR", traceback)
    assert "SIGHUP refused" in record.getMessage()
