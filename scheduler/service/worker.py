"""One worker process of ``scheduler-server``: its own database engine,
host table, broker connection and threading-executor RPC server, all
consuming the shared topic, with the heartbeat and periodic tasks beside
them. It tells the main process how it is doing through
:class:`scheduler.service.worker_state.Channel`.

Signals (sent on by the supervisor): SIGHUP applies the mutable options in
this process without restarting it; SIGTERM drains and exits.
"""
from __future__ import annotations

import threading
import time

import cotyledon
from oslo_log import log as logging

from scheduler.rpc import broker
from scheduler.decide import choice
from scheduler import errors
from scheduler.conf import reload
from scheduler.rpc import transport as rpc
from scheduler.service import worker_state
from scheduler.service import memory
from scheduler.service import peers
from scheduler.db.engine import create_engine
from scheduler.db import retry as db_retry
from scheduler.rpc.endpoint import SchedulerManager
from scheduler.nova.endpoint import NovaSchedulerEndpoint
from scheduler.novadb.source import NovaSource
from scheduler.heat.boots import HeatBoots

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
        self._source: NovaSource | None = None
        self._heat: HeatBoots | None = None

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
        self._engine = create_engine(self.conf)
        manager = SchedulerManager(
            self.conf, self._engine,
            choice.Share(self.worker_id, self.conf.scheduler.workers))
        cell_of = None
        if self.conf.nova.api_database_connection:
            # Nova's databases are the hosts: mirrored into ours before the
            # first load, then kept in step beside the requests.
            self._source = NovaSource(self.conf, self._engine)
            self._source.check()
            started = time.monotonic()
            self._source.sync()
            LOG.info("Nova's databases read in %.2f s",
                     time.monotonic() - started)
            manager.host_manager.external = self._source
            cell_of = self._source.cell_of
        # Nova's boots of a Heat stack's servers land on the stack's plan.
        self._heat = HeatBoots(self.conf, manager.driver, self._engine)
        manager.planned = self._heat.select
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
                                      [manager, NovaSchedulerEndpoint(
                                          manager, cell_of)])
        # Reporting first: the first requests already know their peers.
        threading.Thread(target=self._report, args=(manager,),
                         name="service-report", daemon=True).start()
        self._server.start()
        threading.Thread(target=self._periodic, args=(manager,),
                         name="periodic-tasks", daemon=True).start()
        if self._source is not None:
            threading.Thread(target=self._source.run, args=(self._stopped,),
                             name="nova-sync", daemon=True).start()
        LOG.info("Scheduler worker consuming topic %r as %r with driver %r",
                 self.conf.scheduler.topic, self.conf.host,
                 self.conf.scheduler.driver)

    def _periodic(self, manager: SchedulerManager) -> None:
        interval = self.conf.scheduler.periodic_task_interval
        while not self._stopped.wait(interval):
            # A failed refresh (database away) must not end the loop; the
            # next one may succeed.
            self._attempt(manager.run_periodic_tasks, "run its periodic tasks")
            # What a large message left free in an arena stays there below
            # glibc's trim threshold (service.memory): give it back.
            memory.release_free_memory()

    def _report(self, manager: SchedulerManager) -> None:
        """Heartbeat now, then every ``report_interval`` seconds; each time
        the endpoint takes its place among the servers up on its topic."""
        def heartbeat() -> None:
            manager.take_place(*peers.heartbeat(self.conf, self._engine))
        while True:
            self._attempt(heartbeat, "report to the services table")
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
        refused = None
        try:
            # The main process logs what changed, once for all workers.
            reload.mutate(self.conf, log=False)
            if self._manager is not None:
                self._manager.driver.reload()
            if self._source is not None:
                self._source.reload()
        except Exception as e:
            refused = errors.describe(e, self.conf)
            if refused is None:     # a bug, not a bad value: its traceback
                LOG.exception("Worker %d keeps its previous filters and "
                              "weighers", self.worker_id)
                return
        if refused is not None:
            # Outside the except clause: oslo.log would append the
            # exception's repr to the line.
            LOG.error("Worker %d keeps its previous filters and weighers: "
                      "%s", self.worker_id, refused)
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
            except errors.BrokerUnavailable as e:
                LOG.warning("Worker %d stops without draining: %s",
                            self.worker_id, e)
                return
            self._server.stop()
            self._server.wait()
        if self._transport is not None:
            self._transport.cleanup()
        if self._manager is not None:
            self._manager.close()
        if self._source is not None:
            self._source.close()
        if self._heat is not None:
            self._heat.close()
        if self._engine is not None:
            self._engine.dispose()
