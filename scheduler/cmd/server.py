"""scheduler-server: the daemon.

The main process supervises ``[scheduler] workers`` worker processes with
cotyledon (the process manager under oslo.service's threading backend,
used directly so that we, not it, decide readiness, reloads and when to
give up). Each worker has its own database engine, broker connection and
threading-executor RPC server, all consuming the shared topic. Nothing that
owns a socket or a thread is created before the workers fork, except what
the main process keeps for itself (the workers' report channel, the HTTP
listener, which children close).

Signals: SIGTERM drains and exits (``STOPPING=1``); SIGHUP applies the
mutable options in every worker without restarting it; SIGUSR2 writes an
oslo.reports Guru Meditation report to stderr (or ``[oslo_reports]
log_dir``).
"""
from __future__ import annotations

import io
import logging as pylogging
import os
import signal
import sys
import threading
import time

from amqp.abstract_channel import IGNORED_METHOD_DURING_CHANNEL_CLOSE
from amqp.spec import Basic
import cotyledon
from oslo_log import log as logging

from scheduler.rpc import broker
from scheduler.decide import choice
from scheduler.service import database
from scheduler.cmd import logs
from scheduler.cmd import parsing
from scheduler import conf as sched_conf
from scheduler import errors
from scheduler.service import health
from scheduler.service import http
from scheduler.rpc import malformed
from scheduler.service import memory
from scheduler import metrics
from scheduler.decide import plugins
from scheduler.rpc import transport as rpc
from scheduler.service import sd_notify
from scheduler.service import worker_state
from scheduler.db import api as db
from scheduler.db import retry as db_retry
from scheduler.db import wrapped
from scheduler.decide.filter import Pipeline
from scheduler.rpc.endpoint import SchedulerManager
from scheduler.nova.endpoint import NovaSchedulerEndpoint

LOG = logging.getLogger(__name__)

#: Seconds a stopping worker gives the broker to answer before it stops
#: waiting for in-flight replies that could not be delivered anyway.
BROKER_STOP_BUDGET = 2.0


class SchedulerWorker(cotyledon.Service):
    """One worker process: host table, RPC server, periodic tasks.

    It reports ``loading`` -> ``consuming`` (then a heartbeat) to the main
    process, or ``failed`` with the one-line cause before it exits.
    """
    name = "scheduler-worker"

    def __init__(self, worker_id: int, conf, channel: worker_state.Channel
                 ) -> None:
        super().__init__(worker_id)
        self.conf = conf
        self.channel = channel
        self._stopped = threading.Event()
        self._manager: SchedulerManager | None = None
        self._server = None
        self._transport = None
        self._engine = None

    def run(self) -> None:
        """Start, then heartbeat until stopped; exit 1 if start fails."""
        self.channel.report(self.worker_id, worker_state.LOADING)
        try:
            self._start()
            failure = None
        except Exception as e:
            failure = e
        if failure is not None:
            # Logged outside the except block so oslo.log adds no
            # traceback: the main process repeats this line as its exit.
            line = errors.describe(failure, self.conf) or \
                f"{type(failure).__name__}: {failure}"
            LOG.error("Worker %d cannot start: %s", self.worker_id, line)
            self.channel.report(self.worker_id, worker_state.FAILED, line,
                                not errors.restart_may_help(failure))
            raise SystemExit(1)
        self.channel.report(self.worker_id, worker_state.CONSUMING)
        while not self._stopped.wait(worker_state.HEARTBEAT_INTERVAL):
            self.channel.report(self.worker_id, worker_state.CONSUMING)

    def _start(self) -> None:
        self._engine = db.create_engine(self.conf)
        manager = SchedulerManager(
            self.conf, self._engine,
            choice.Share(self.worker_id, self.conf.scheduler.workers))
        # Before consuming: otherwise the first request pays for the load
        # (seconds at 100,000 hosts) and READY=1 would be a lie.
        started = time.monotonic()
        nodes = manager.host_manager.refresh(full=True)
        LOG.info("Host table loaded: %d nodes in %.2f s", nodes,
                 time.monotonic() - started)
        self._manager = manager
        self._transport = rpc.get_transport(self.conf)
        # Nova's 4.x API beside our 1.x one: the dispatcher picks by the
        # message's major version.
        self._server = rpc.get_server(self.conf, self._transport,
                                      [manager, NovaSchedulerEndpoint(manager)])
        # Reporting first: the first requests already know their peers.
        threading.Thread(target=self._report, args=(manager,),
                         name="service-report", daemon=True).start()
        self._server.start()
        threading.Thread(target=self._periodic, args=(manager,),
                         name="periodic-tasks", daemon=True).start()
        LOG.info("Scheduler worker consuming topic %r as %r with driver %r",
                 self.conf.scheduler.topic, self.conf.host,
                 self.conf.scheduler.driver)

    def _periodic(self, manager: SchedulerManager) -> None:
        interval = self.conf.scheduler.periodic_task_interval
        while not self._stopped.wait(interval):
            # A failed refresh (database away) must not end the loop; the
            # next one may succeed.
            self._attempt(manager.run_periodic_tasks, "run its periodic tasks")

    def _report(self, manager: SchedulerManager) -> None:
        """Heartbeat now, then every ``report_interval`` seconds."""
        while True:
            self._attempt(manager.report,
                          "report to the services table")
            if self._stopped.wait(self.conf.report_interval):
                return

    def _attempt(self, task, what: str) -> None:
        """Run ``task``: an operator's problem (the database away) costs
        one WARNING line naming it, a bug its traceback; never raises."""
        try:
            task()
            return
        except Exception as e:
            why = errors.describe(e, self.conf)
            if why is None:
                LOG.exception("Worker %d could not %s", self.worker_id, what)
                return
        # Outside the except clause: oslo.log would append the exception's
        # text, SQL statement and all, to a line logged inside it.
        LOG.warning("Worker %d could not %s: %s", self.worker_id, what, why)

    def reload(self) -> None:
        """SIGHUP: re-read the configuration files and apply the mutable
        options (log levels; filters, weighers and their settings as one
        new set) in this process. The host table, the RPC server and the
        process stay. A bad new value is logged in one line and the
        current settings stay in force."""
        try:
            self.conf.mutate_config_files()
            if self._manager is not None:
                self._manager.driver.reload()
        except Exception as e:
            LOG.error("Worker %d keeps its previous filters and weighers: "
                      "%s", self.worker_id, errors.one_line(e, self.conf))
            return
        # What runs, not what is listed: the filter driver adds the
        # capacity filters the list lacks (drivers.filter.with_capacity)
        # and reads nova's spellings of weighers; the chance driver runs
        # fixed filters and weighs nothing.
        fs = self.conf.filter_scheduler
        if self._manager is not None:
            driver = self._manager.driver
            filters = [f.name for f in getattr(driver, "filters", ())]
            weighers = [w.name for w in getattr(driver, "weighers", ())]
        else:
            filters, weighers = fs.enabled_filters, fs.weighers
        LOG.info("Worker %d applied the configuration: filters %s; "
                 "weighers %s", self.worker_id, ", ".join(filters) or "none",
                 ", ".join(weighers) or "none")

    def terminate(self) -> None:
        """SIGTERM: stop taking messages, let those in flight reply, exit.

        With the broker away nothing in flight can reply and oslo.messaging
        would wait for it to come back (up to the graceful shutdown
        timeout): then the worker exits at once.
        """
        self._stopped.set()
        # Requests and tasks waiting for the database give up now (each
        # with its one line): the drain below must not wait out [scheduler]
        # db_outage_timeout.
        db_retry.stop()
        if self._server is not None:
            try:
                broker.check(self.conf, BROKER_STOP_BUDGET)
            except broker.BrokerUnavailable as e:
                LOG.warning("Worker %d stops without draining: %s",
                            self.worker_id, e)
                return
            self._server.stop()
            self._server.wait()
        if self._transport is not None:
            self._transport.cleanup()
        if self._manager is not None:
            self._manager.close()
        if self._engine is not None:
            self._engine.dispose()


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
        try:
            check_config(sched_conf.load(self.argv))
        except Exception as e:
            LOG.error("SIGHUP refused; every worker keeps its previous filters "
                      "and weighers: %s",
                      errors.one_line(e, self.conf))
            return
        super()._reload()

    def _reread_config(self) -> None:
        # cotyledon then sends SIGHUP to every worker (SchedulerWorker.
        # reload); the main process only needs its own log levels.
        self.conf.mutate_config_files()
        LOG.info("SIGHUP: workers re-read the configuration files")


def check_config(conf) -> None:
    """What a configuration must pass to be taken, at start-up and on
    SIGHUP: every option's value reads (a bad one raises, naming it,
    instead of surfacing later in whatever reads it first), and the
    filters and weighers it names load.

    :raises cfg.Error: naming the option and its file.
    :raises ConfigError: naming the plugin option.
    """
    # Built as a request's pipeline is (the same loading and freezing),
    # then dropped: what passes here is what the workers will take.
    Pipeline.load(conf)


def check_startup(conf, config_given: bool = True) -> None:
    """Fail before forking on what no worker could survive: plugins that
    do not load, a database that is missing, without our schema or that
    this user may not write, a broker that does not answer within
    ``[scheduler] broker_startup_timeout`` or refuses the login, an HTTP
    listen address that is malformed, an RPC thread pool of no thread.

    :raises ConfigError: naming the option or the database, and the fix.
    :raises broker.BrokerUnavailable: naming the broker (BrokerRefused
        when the credentials are wrong).
    """
    check_config(conf)
    plugins.check_driver(conf)
    rpc.check_server_options(conf)
    if conf.scheduler.http_listen:
        http.parse_address(conf.scheduler.http_listen)
    database.check_database(conf, config_given=config_given)
    engine = db.create_engine(conf)
    try:
        database.require_schema(conf, engine)
        database.require_writable(conf, engine)
    finally:
        engine.dispose()
    broker.check(conf, conf.scheduler.broker_startup_timeout)


def _register_server_opts(conf) -> None:
    """The libraries' options only the server reads: oslo.service's
    (graceful_shutdown_timeout) and oslo.reports' ([oslo_reports])."""
    from oslo_reports import opts as gmr_opts
    from oslo_service import opts as service_opts

    service_opts.register_service_opts(conf)
    for group, opts in gmr_opts.list_opts():
        conf.register_opts(opts, group=group)


class _ReportVersion:
    """The package section of the report (what nova's version module
    answers oslo.reports)."""

    @staticmethod
    def vendor_string() -> str:
        return "scheduler"

    @staticmethod
    def product_string() -> str:
        return "scheduler-server"

    @staticmethod
    def version_string_with_package() -> str:
        return parsing.version()


def _guru_meditation(conf) -> None:
    """SIGUSR2 -> a Guru Meditation report (threads, config, package), as
    nova's services do. Set before forking: the workers inherit it."""
    from oslo_reports import guru_meditation_report as gmr

    gmr.TextGuruMeditation.setup_autorun(
        _ReportVersion, service_name="scheduler-server", conf=conf)


def _escape_unencodable_in_logs() -> None:
    """Every log handler's stream writes what its encoding cannot hold
    (a lone surrogate, which JSON carries as ``"\\ud800"`` and a refusal
    may echo) as a backslash escape: with the default strict errors the
    line was lost and a "--- Logging error ---" traceback written
    instead."""
    for handler in pylogging.getLogger().handlers:
        if isinstance(handler, pylogging.FileHandler):
            handler.errors = "backslashreplace"     # for a reopened file
        stream = getattr(handler, "stream", None)
        if isinstance(stream, io.TextIOWrapper) and not stream.closed:
            stream.reconfigure(errors="backslashreplace")


class _CancelOfOwnFanoutQueue(pylogging.Filter):
    """Drops py-amqp's "Received method (60, 30) during closing channel"
    WARNING, written at every stop: oslo.messaging deletes a worker's
    fanout queue as it closes its connection, its consumer still on it,
    and RabbitMQ tells that consumer with a basic.cancel (60, 30) that
    reaches the channel closing. Any other method stays a WARNING."""

    def filter(self, record: pylogging.LogRecord) -> bool:
        return not (record.msg == IGNORED_METHOD_DURING_CHANNEL_CLOSE
                    and record.args and record.args[0] == Basic.Cancel)


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGTERM: 0, or 1 after one ``ERROR:`` line
    (:mod:`scheduler.errors`) when it cannot start or a worker fails for a
    reason a restart cannot fix."""
    argv = sys.argv[1:] if argv is None else argv
    loaded: list = []
    # First of all: systemd's socket is ours alone (see sd_notify).
    notifier = sd_notify.from_environment()

    def body() -> int:
        conf = sched_conf.load(argv, description="Scheduler RPC server",
                               version=parsing.version())
        loaded.append(conf)
        _register_server_opts(conf)
        logs.setup_log_output(conf, "scheduler")
        _escape_unencodable_in_logs()
        pylogging.getLogger("amqp").addFilter(_CancelOfOwnFanoutQueue())
        # Before forking, so every worker inherits them.
        malformed.install()
        wrapped.install()
        memory.tune_allocator()
        notifier.send(STATUS="checking plugins, database and broker")
        check_startup(conf, config_given=bool(conf.config_file
                                              or conf.config_dir))
        _guru_meditation(conf)
        channel = worker_state.Channel()
        states = worker_state.WorkerStates(channel, conf.scheduler.workers)
        monitor = health.Monitor(states, health.DatabaseProbe(conf),
                                 notifier)
        if conf.scheduler.http_listen:
            # Before forking: every worker writes its metrics where this
            # process's /metrics reads them.
            metrics.use_multiprocess()
            http.serve(conf.scheduler.http_listen, {
                "/healthcheck": http.healthcheck(monitor.verdict),
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

    return errors.run(body, conf=lambda: loaded[0] if loaded else None)


if __name__ == "__main__":
    sys.exit(main())
