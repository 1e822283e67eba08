"""The main process of ``scheduler-server``: it supervises
``[scheduler] workers`` worker processes (:mod:`scheduler.service.worker`)
with cotyledon (the process manager under oslo.service's threading
backend, used directly so that we, not it, decide readiness, reloads and
when to give up). Nothing that owns a socket or a thread is created before
the workers fork, except what the main process keeps for itself (the
workers' report channel, the HTTP listener, which children close).

Signals: SIGTERM drains and exits (``STOPPING=1``); SIGHUP applies the
mutable options in every worker without restarting it; SIGUSR2 writes an
oslo.reports Guru Meditation report to stderr (or ``[oslo_reports]
log_dir``).
"""
from __future__ import annotations

import dataclasses
import os
import signal

import cotyledon
from oslo_log import log as logging

from scheduler import conf as sched_conf
from scheduler.conf import reload
from scheduler import errors
from scheduler.service import health
from scheduler.service import http
from scheduler.rpc import malformed
from scheduler.service import memory
from scheduler import metrics
from scheduler.service import sd_notify
from scheduler.service import startup
from scheduler.service import worker_state
from scheduler.service.worker import SchedulerWorker
from scheduler.db import wrapped
from scheduler.novadb.probe import NovaProbe

LOG = logging.getLogger(__name__)


class Supervisor(cotyledon.ServiceManager):
    """cotyledon's manager, which gives up instead of re-forking a worker
    that failed for a reason a restart cannot fix."""

    def __init__(self, conf, states: worker_state.WorkerStates,
                 monitor: health.Monitor, argv: list[str] = ()) -> None:
        super().__init__(
            graceful_shutdown_timeout=conf.graceful_shutdown_timeout)
        self.conf = conf
        self.argv = list(argv)
        self.states = states
        self.monitor = monitor
        #: Why the server gives up (one line), once a worker failed for good.
        self.fatal: str | None = None
        self.register_hooks(on_terminate=monitor.stopping,
                            on_reload=self._reread_config,
                            on_dead_worker=self._worker_died)

    def _worker_died(self, service_id, worker_id: int, exit_code: int
                     ) -> None:
        last = self.states.exited(worker_id, exit_code)
        if last is None or last.state != worker_state.FAILED or \
                not last.fatal or self.fatal is not None:
            return
        self.fatal = last.reason
        self.monitor.notifier.send(
            STATUS=f"worker {worker_id} (pid {last.pid}) failed: "
                   f"{last.reason}")
        # The main loop turns SIGTERM into a shutdown of the other workers.
        os.kill(os.getpid(), signal.SIGTERM)

    def _start_worker(self, service_id, worker_id) -> None:
        # Overrides cotyledon's: no replacement for a worker that failed
        # for good while the shutdown it asked for is on its way.
        if self.fatal is None:
            super()._start_worker(service_id, worker_id)

    def _reload(self) -> None:
        # Check the files in a ConfigOpts of their own first: a reload
        # that would be refused must change nothing, neither in the workers
        # nor here, where their replacements are forked from.
        refused = None
        try:
            startup.check_config(sched_conf.load(self.argv))
        except Exception as e:
            refused = errors.describe(e, self.conf)
            if refused is None:     # a bug, not a bad value: its traceback
                LOG.exception("SIGHUP refused; every worker keeps its "
                              "previous filters and weighers")
                return
        if refused is not None:
            # Outside the except clause: oslo.log would append the
            # exception's repr (a LocationInfo and all) to the line.
            LOG.error("SIGHUP refused; every worker keeps its previous "
                      "filters and weighers: %s", refused)
            return
        super()._reload()

    def _reread_config(self) -> None:
        # cotyledon then sends SIGHUP to every worker (SchedulerWorker.
        # reload); the main process only needs its own log levels, and
        # logs what changed, once for all.
        reload.mutate(self.conf)
        LOG.info("SIGHUP: workers re-read the configuration files")


def register_opts(conf) -> None:
    """The libraries' options only the server reads: oslo.service's
    (graceful_shutdown_timeout) and oslo.reports' ([oslo_reports])."""
    from oslo_reports import opts as gmr_opts
    from oslo_service import opts as service_opts

    service_opts.register_service_opts(conf)
    for group, opts in gmr_opts.list_opts():
        conf.register_opts(opts, group=group)


@dataclasses.dataclass(frozen=True)
class _ReportVersion:
    """The package section of the report (what nova's version module
    answers oslo.reports)."""

    version: str

    @staticmethod
    def vendor_string() -> str:
        return "scheduler"

    @staticmethod
    def product_string() -> str:
        return "scheduler-server"

    def version_string_with_package(self) -> str:
        return self.version


def _report_of(conf):
    """oslo.reports' text Guru Meditation report, its Configuration
    section reading ``conf``: oslo.reports reads the global ``cfg.CONF``
    there, which this service never loads (``setup_autorun``'s ``conf``
    only says where the report goes). Secret options stay ``***``."""
    from oslo_reports.generators import conf as conf_generator
    from oslo_reports import guru_meditation_report as gmr

    class Report(gmr.TextGuruMeditation):
        def add_section(self, heading, generator, index=None) -> None:
            if heading == "Configuration":
                generator = conf_generator.ConfigReportGenerator(conf)
            super().add_section(heading, generator, index)
    return Report


def _guru_meditation(conf, version: str) -> None:
    """SIGUSR2 -> a Guru Meditation report (threads, config, package), as
    nova's services do. Set before forking: the workers inherit it."""
    _report_of(conf).setup_autorun(
        _ReportVersion(version), service_name="scheduler-server", conf=conf)


def serve(conf, argv: list[str], notifier: sd_notify.Notifier,
          version: str) -> int:
    """Check what no worker could survive, start the workers and the HTTP
    listener, and supervise them until SIGTERM.

    :param conf: the loaded configuration, with :func:`register_opts`'
        options, its logging set up.
    :param argv: the command line, to re-read the files on SIGHUP.
    :param notifier: systemd's socket, taken first thing by the caller.
    :param version: this package's version, for the SIGUSR2 report.
    :returns: the exit status after SIGTERM (0).
    :raises CommandFailed: a worker failed for a reason a restart cannot
        fix (naming it); and whatever :func:`startup.check_startup`
        raises.
    """
    # Before forking, so every worker inherits them.
    malformed.install()
    wrapped.install()
    memory.tune_allocator()
    notifier.send(STATUS="checking plugins, database and broker")
    startup.check_startup(conf, config_given=bool(conf.config_file
                                                  or conf.config_dir))
    _guru_meditation(conf, version)
    channel = worker_state.Channel()
    states = worker_state.WorkerStates(channel, conf.scheduler.workers)
    nova = None
    if conf.nova.api_database_connection:
        nova = NovaProbe(conf)
        nova.start()
    monitor = health.Monitor(states, health.DatabaseProbe(conf), notifier,
                             nova.problem if nova else lambda: None)
    if conf.scheduler.http_listen:
        # Before forking: every worker writes its metrics where this
        # process's /metrics reads them.
        metrics.use_multiprocess()
        http.serve(conf.scheduler.http_listen, {
            "/healthcheck": http.healthcheck(monitor.verdict,
                                             lambda: monitor.degraded),
            "/metrics": http.prometheus,
        })
    supervisor = Supervisor(conf, states, monitor, argv)
    supervisor.add(SchedulerWorker, conf.scheduler.workers,
                   args=(conf, channel))
    notifier.send(STATUS=f"starting {conf.scheduler.workers} "
                         f"worker(s): loading host table")
    monitor.start()
    try:
        supervisor.run()
    except SystemExit as e:
        code = e.code or 0
    else:
        code = 0
    finally:
        metrics.cleanup()
    if supervisor.fatal:
        raise errors.CommandFailed(supervisor.fatal)
    return int(code)
