"""The server's main process: what a SIGHUP it refuses logs."""
from __future__ import annotations

import logging
import types

import pytest

from scheduler import exception
from scheduler.service import supervisor


@pytest.mark.parametrize("error, traceback", [
    (KeyError("weighers"), True),
    (exception.ConfigError("[filter_scheduler] weighers: no such weigher"),
     False),
], ids=["bug", "bad value"])
def test_a_refused_sighup_logs_a_bug_with_its_traceback(
        conf, caplog, monkeypatch, error, traceback):
    def check_config(conf):
        raise error
    monkeypatch.setattr(supervisor.startup, "check_config", check_config)
    monkeypatch.setattr(supervisor.sched_conf, "load", lambda argv: conf)
    this = types.SimpleNamespace(argv=[], conf=conf)
    with caplog.at_level(logging.INFO, logger="scheduler.service.supervisor"):
        supervisor.Supervisor._reload(this)
    [record] = caplog.records
    assert (record.levelname, record.exc_info is not None) == (
        "ERROR", traceback)
    assert "SIGHUP refused" in record.getMessage()
