"""Is the server healthy: every worker consuming and the database answering.

:class:`Monitor` runs in the main process. It is the one place that decides
health; it tells systemd (``READY=1`` once, ``STATUS=`` on every change,
``WATCHDOG=1`` while healthy) and ``/healthcheck`` reads its
:meth:`Monitor.verdict`. Workers' states come from
:class:`scheduler.service.worker_state.WorkerStates`.
"""
from __future__ import annotations

import os
import select
import threading
import time
from typing import Callable

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import pool

from scheduler import errors
from scheduler.service import sd_notify
from scheduler import fork_guard
from scheduler.db.engine import engine_url
from scheduler.service.worker_state import WorkerStates

LOG = logging.getLogger(__name__)

#: Seconds between checks when nothing is reported.
CHECK_INTERVAL = 1.0
#: Seconds a database connection attempt may take before it counts as down.
DB_CONNECT_TIMEOUT = 5


class DatabaseProbe:
    """``SELECT 1`` on a connection of its own, opened per check (NullPool):
    the main process forks workers at any time, and a pooled connection
    inherited by a child is a shared socket."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        # oslo.db's URL, connection_parameters and all: a driver that
        # refuses one must fail here too, not only in the workers.
        url = engine_url(conf)
        args = {}
        if url.get_backend_name() in ("postgresql", "mysql"):
            args["connect_timeout"] = DB_CONNECT_TIMEOUT
        if url.get_backend_name() == "mysql":
            # PyMySQL reads the server's greeting under read_timeout, not
            # connect_timeout: without it a server that accepts and never
            # greets holds the probe (and every verdict after it) for ever.
            args["read_timeout"] = DB_CONNECT_TIMEOUT
        self._sqlite = url.database if url.get_backend_name() == "sqlite" \
            else None
        self._engine = sa.create_engine(url, poolclass=pool.NullPool,
                                        connect_args=args)

    def problem(self) -> str | None:
        """None when the database answers, else one line saying why not."""
        # SQLite would create a missing file: the probe must not.
        if self._sqlite and self._sqlite != ":memory:" and \
                not os.path.exists(self._sqlite):
            return f"database file {self._sqlite} does not exist"
        try:
            # A worker forked meanwhile would inherit the driver's locks.
            with fork_guard.held(), self._engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
        except (ValueError, TypeError, LookupError, AttributeError) as e:
            # Not a DBAPI error: the driver refused an argument before
            # talking to the server (PyMySQL's unknown charset).
            return errors.driver_refused(self.conf, e).message
        except Exception as e:
            return (errors.describe(e, self.conf)
                    or f"database {errors.database_name(self.conf)}: {e}")
        return None


class Monitor:
    """Watches workers and the database; notifies systemd; answers
    :meth:`verdict`. Call :meth:`start` once the workers are launched."""

    def __init__(self, workers: WorkerStates, database: DatabaseProbe,
                 notifier: sd_notify.Notifier,
                 nova: Callable[[], str | None] = lambda: None) -> None:
        """``nova``: what of nova's databases is not answering (nova's
        databases as the host source), or None: the server still serves
        the other cells, so it is degraded, not unhealthy."""
        self.workers = workers
        self.database = database
        self.notifier = notifier
        self._nova = nova
        #: Healthy, but with hosts it cannot see: why, in one line.
        self.degraded: str | None = None
        self._verdict: tuple[bool, str] = (False, "starting")
        self._ready_sent = False
        self._stopping = threading.Event()

    def verdict(self) -> tuple[bool, str]:
        """(healthy, one line): healthy only when every worker consumes and
        the database answered the last check."""
        return self._verdict

    def check(self) -> tuple[bool, str]:
        """Check now, notify systemd of what changed; the new verdict."""
        consuming, line = self.workers.verdict()
        problem = self.database.problem()
        healthy = consuming and problem is None
        if problem:
            line += f"; database: {problem}"
        self.degraded = self._nova()
        if self.degraded:
            line += f"; degraded: {self.degraded}"
        previous = self._verdict
        self._verdict = (healthy, line)
        if self._stopping.is_set():
            return self._verdict
        if healthy and not self._ready_sent:
            self._ready_sent = True
            self.notifier.send(READY="1", STATUS=line)
            LOG.info("Ready: %s", line)
        elif (healthy, line) != previous:
            self.notifier.send(STATUS=line)
            # Before READY this is start-up progress, not a problem.
            log = LOG.warning if self._ready_sent and not healthy \
                else LOG.info
            log("Health: %s", line)
        return self._verdict

    def start(self) -> threading.Thread:
        """Run the checks in a daemon thread until :meth:`stopping`."""
        thread = threading.Thread(target=self._run, name="health-monitor",
                                  daemon=True)
        thread.start()
        return thread

    def stopping(self) -> None:
        """SIGTERM: tell systemd, stop pinging the watchdog."""
        self._stopping.set()
        self.notifier.send(STOPPING="1", STATUS="stopping")

    def _run(self) -> None:
        interval = self.notifier.watchdog_interval
        last_ping = float("-inf")
        while not self._stopping.is_set():
            try:
                healthy, _ = self.check()
            except Exception:
                # A bug here must not end the loop: systemd would then
                # kill a healthy server for want of pings. Say it once.
                LOG.exception("Health check failed")
                healthy = False
            now = time.monotonic()
            # No ping while unhealthy: a wedged or broken server is then
            # restarted by systemd (WatchdogSec) instead of lying.
            if interval and healthy and now - last_ping >= interval:
                self.notifier.send(WATCHDOG="1")
                last_ping = now
            wait = CHECK_INTERVAL if not interval else min(CHECK_INTERVAL,
                                                           interval)
            # Wake early when a worker reports, so READY follows the last
            # "consuming" at once.
            try:
                select.select([self.workers.channel], [], [], wait)
            except OSError:
                time.sleep(wait)
