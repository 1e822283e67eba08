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


def test_sigusr2_reports_the_services_own_configuration(conf, monkeypatch,
                                                        capsys):
    """oslo.reports' Configuration section reads the global cfg.CONF,
    which this service never loads (setup_autorun's conf= only says where
    the report goes): it lacked [DEFAULT] transport_url and host,
    [scheduler] and [filter_scheduler]."""
    import signal as signals

    import oslo_messaging as messaging
    supervisor.register_opts(conf)
    messaging.TransportURL.parse(conf)   # registers it, as the server does
    conf.set_override("host", "sched-report-1")
    conf.set_override("transport_url", "rabbit://u:secret@mq:5672/")
    conf.set_override("topic", "report-topic", group="scheduler")
    handlers = {}
    monkeypatch.setattr(signals, "signal",
                        lambda signum, handler: handlers.update(
                            {signum: handler}))
    supervisor._guru_meditation(conf, "1.2.3")
    handlers[signals.SIGUSR2](signals.SIGUSR2, None)
    report = capsys.readouterr().err
    configuration = report.split("Configuration")[-1]
    assert "host = sched-report-1" in configuration
    assert "transport_url = ***" in configuration   # a secret stays one
    assert "secret" not in report
    assert "scheduler: \n" in configuration or \
        "\nscheduler:" in configuration, configuration[:2000]
    assert "topic = report-topic" in configuration
    assert "enabled_filters = " in configuration
    assert "product = scheduler-server" in report


def test_a_sighups_changes_are_logged_with_the_values_in_force(
        tmp_path, oslo_log_lines):
    """'Option filter_scheduler.ram_weight_multiplier changed from [None]
    to [-2.0]' said oslo.config, for a default of 1.0."""
    from scheduler import conf as sched_conf
    path = tmp_path / "scheduler.conf"
    path.write_text("[scheduler]\nworkers = 1\n")
    this = types.SimpleNamespace(conf=sched_conf.load(
        ["--config-file", str(path)]))
    lines = [oslo_log_lines("oslo_config.cfg"),
             oslo_log_lines("scheduler.conf.reload")]
    path.write_text("[scheduler]\nworkers = 1\n[filter_scheduler]\n"
                    "ram_weight_multiplier = -2.0\n")
    supervisor.Supervisor._reread_config(this)
    changes = [line for logged in lines for line in logged
               if "changed from" in line]
    assert [line.split(" [-] ")[1] for line in changes] == [
        "[filter_scheduler] ram_weight_multiplier changed from 1.0 to -2.0"]


def test_a_refused_sighup_is_one_line_without_the_exception(
        tmp_path, oslo_log_lines):
    """The line ended in ': oslo_config.cfg.ConfigFileValueError: Value
    for option ... from LocationInfo(location=<Locations.user: (4,
    True)>, ...) is not valid: ...' (oslo.log appends the exception in
    flight to a line logged inside its except clause)."""
    from scheduler import conf as sched_conf
    path = tmp_path / "scheduler.conf"
    path.write_text("[scheduler]\nworkers = 1\n")
    argv = ["--config-file", str(path)]
    this = types.SimpleNamespace(argv=argv, conf=sched_conf.load(argv))
    lines = oslo_log_lines("scheduler.service.supervisor")
    path.write_text("[filter_scheduler]\nram_weight_multiplier = lots\n")
    supervisor.Supervisor._reload(this)
    [line] = lines
    assert line.endswith(
        f" ERROR scheduler.service.supervisor [-] SIGHUP refused; every "
        f"worker keeps its previous filters and weighers: "
        f"[filter_scheduler] ram_weight_multiplier in {path}: could not "
        f"convert string to float: 'lots'; fix the value in the "
        f"configuration file"), line
