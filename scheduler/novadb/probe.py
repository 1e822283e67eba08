"""NovaProbe: do nova's API database and each enabled cell's answer, for
``/healthcheck`` and systemd's status line.

It runs in the server's main process, which forks workers at any time: its
engines keep no connection (NullPool), so no child inherits a socket. It
checks in a thread of its own, because a database that stops answering
takes up to its timeout to say so, and the health monitor must go on
pinging systemd's watchdog meanwhile.
"""
from __future__ import annotations

import threading

from oslo_config import cfg
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import foreign
from scheduler import fork_guard
from scheduler.db import response
from scheduler.novadb import cells
from scheduler.novadb import schema
from scheduler.db.foreign import READ_ERRORS
from scheduler.db.foreign import why

#: Seconds between checks.
INTERVAL = 5.0


class NovaProbe:
    """The last check's one line (None: all answered)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._timeout = response.timeout(conf)
        self._engines: dict[str, sa.Engine] = {}
        self._problem: str | None = None
        self._stopped = threading.Event()

    def problem(self) -> str | None:
        """The cells (or the API database) not answering at the last
        check, in one line; None when all answered."""
        return self._problem

    def start(self) -> None:
        """Check now and then every :data:`INTERVAL` seconds, in a daemon
        thread, until :meth:`stop`."""
        threading.Thread(target=self._run, name="nova-probe",
                         daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while True:
            self._problem = self.check()
            if self._stopped.wait(INTERVAL):
                return

    def check(self) -> str | None:
        """Check now: the databases not answering, in one line."""
        try:
            with fork_guard.held(), self._engine(
                    self.conf.nova.api_database_connection,
                    "[nova] api_database_connection").connect() as conn:
                found = cells.enabled_cells(
                    conn, self.conf.nova.cell_database_username,
                    self.conf.nova.cell_database_password)
        except (exception.ConfigError, *READ_ERRORS) as e:
            return f"nova's API database is not answering ({why(e)})"
        problems = []
        for cell in found:
            try:
                with fork_guard.held(), self._engine(
                        cell.url, f"cell {cell.label}").connect() as conn:
                    # A table, not SELECT 1: SQLite answers that without
                    # reading the file (and its locks).
                    conn.execute(sa.select(schema.services.c.id).limit(1))
            except (exception.ConfigError, *READ_ERRORS) as e:
                problems.append(f"cell {cell.label} is not answering "
                                f"({why(e)})")
        return "; ".join(problems) or None

    def _engine(self, url: str, what: str) -> sa.Engine:
        if url not in self._engines:
            self._engines[url] = foreign.reader_engine(url, what,
                                                     self._timeout,
                                                     pooled=False)
        return self._engines[url]
