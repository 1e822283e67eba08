"""scheduler-server: the daemon.

oslo.service runs ``[scheduler] workers`` processes, each with its own
database engine, broker connection and threading-executor RPC server, all
consuming the shared topic. Nothing that owns a socket or a thread is created
before the workers fork.
"""
from __future__ import annotations

import sys
import threading

from oslo_service import backend


# The threading backend must be chosen before anything imports
# oslo_service.service (the default backend is still eventlet).
backend.init_backend(backend.BackendType.THREADING)

from oslo_log import log as logging  # noqa: E402
from oslo_service import service  # noqa: E402

from scheduler import broker  # noqa: E402
from scheduler import cmd  # noqa: E402
from scheduler import conf as sched_conf  # noqa: E402
from scheduler import errors  # noqa: E402
from scheduler import http  # noqa: E402
from scheduler import malformed  # noqa: E402
from scheduler import metrics  # noqa: E402
from scheduler import plugins  # noqa: E402
from scheduler import rpc  # noqa: E402
from scheduler.db import api as db  # noqa: E402
from scheduler.manager import SchedulerManager  # noqa: E402
from scheduler.nova.endpoint import NovaSchedulerEndpoint  # noqa: E402

LOG = logging.getLogger(__name__)


class SchedulerService(service.ServiceBase):
    """One worker: RPC server + periodic tasks around a SchedulerManager."""

    def __init__(self, conf):
        self.conf = conf
        self._stopped = threading.Event()
        self._server = None
        self._transport = None
        self._engine = None
        self._manager: SchedulerManager | None = None

    def start(self) -> None:
        self._engine = db.create_engine(self.conf)
        manager = self._manager = SchedulerManager(self.conf, self._engine)
        self._transport = rpc.get_transport(self.conf)
        # Nova's 4.x API beside our 1.x one: the dispatcher picks by the
        # message's major version.
        self._server = rpc.get_server(self.conf, self._transport,
                                      [manager, NovaSchedulerEndpoint(manager)])
        self._server.start()
        threading.Thread(target=self._periodic, args=(manager,),
                         name="periodic-tasks", daemon=True).start()
        LOG.info("Scheduler worker consuming topic %r as %r with driver %r",
                 self.conf.scheduler.topic, self.conf.host,
                 self.conf.scheduler.driver)

    def _periodic(self, manager: SchedulerManager) -> None:
        interval = self.conf.scheduler.periodic_task_interval
        while not self._stopped.wait(interval):
            try:
                manager.run_periodic_tasks()
            except Exception:
                # A failed refresh (database away) must not end the loop;
                # the next one may succeed.
                LOG.exception("Periodic task failed")

    def stop(self, graceful: bool = False) -> None:
        # Stop taking messages, then let the ones in flight finish and reply.
        if self._server is not None:
            self._server.stop()
            self._server.wait()
            self._server = None
        if self._transport is not None:
            self._transport.cleanup()
            self._transport = None
        if self._manager is not None:
            self._manager.close()
            self._manager = None
        if self._engine is not None:
            self._engine.dispose()
        self._stopped.set()

    def wait(self) -> None:
        self._stopped.wait()

    def reset(self) -> None:
        pass


def check_startup(conf, config_given: bool = True) -> None:
    """Fail before forking on what no worker could survive: plugins that
    do not load, a database that is missing or without our schema, a
    broker that does not answer within ``[scheduler]
    broker_startup_timeout`` or refuses the login.

    :raises ConfigError: naming the option or the database, and the fix.
    :raises broker.BrokerUnavailable: naming the broker (BrokerRefused
        when the credentials are wrong).
    """
    plugins.load_filters(conf)
    plugins.load_weighers(conf)
    plugins.check_driver(conf)
    if conf.scheduler.http_listen:
        http.parse_address(conf.scheduler.http_listen)
    cmd.check_database(conf, config_given=config_given)
    engine = db.create_engine(conf)
    try:
        cmd.require_schema(conf, engine)
    finally:
        engine.dispose()
    broker.check(conf, conf.scheduler.broker_startup_timeout)


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGTERM: 0, or 1 after one ``ERROR:`` line
    (:mod:`scheduler.errors`) when it cannot start."""
    argv = sys.argv[1:] if argv is None else argv
    loaded: list = []

    def body() -> int:
        conf = sched_conf.load(argv, description="Scheduler RPC server",
                               version=cmd.version())
        loaded.append(conf)
        logging.setup(conf, "scheduler")
        # Before forking, so every worker inherits it.
        malformed.install()
        check_startup(conf, config_given=bool(conf.config_file
                                              or conf.config_dir))
        if conf.scheduler.http_listen:
            # Before forking: every worker writes its metrics where this
            # process's /metrics reads them.
            metrics.use_multiprocess()
            http.serve(conf.scheduler.http_listen,
                       {"/metrics": http.prometheus})
        try:
            launcher = service.launch(conf, SchedulerService(conf),
                                      workers=conf.scheduler.workers,
                                      restart_method="mutate")
            return launcher.wait() or 0
        finally:
            metrics.cleanup()

    return errors.run(body, conf=lambda: loaded[0] if loaded else None)


if __name__ == "__main__":
    sys.exit(main())
