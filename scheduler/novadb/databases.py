"""NovaDatabases: nova's API database and the enabled cells', each with
an engine of its own, checked to be nova's before they are read.

Which cells there are changes while the service runs (a cell created,
disabled or enabled): :meth:`NovaDatabases.read_cells` brings the set up
to date, opening and checking a new cell's database, letting go of a cell
gone. Every read of these databases, connecting included, waits as long
as one of our own (``[scheduler] db_lock_timeout`` and a margin): then
the database counts as not answering.
"""
from __future__ import annotations

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import foreign
from scheduler.db.foreign import READ_ERRORS
from scheduler.db.foreign import why
from scheduler.db import response
from scheduler.novadb import cells
from scheduler.novadb import reading
from scheduler.novadb import schema
from scheduler.novadb.cells import Cell

LOG = logging.getLogger(__name__)

class NovaDatabases:
    """The API database's engine (:attr:`api`), and the enabled cells
    (:attr:`cells`, by uuid) with theirs (:attr:`engines`)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self.timeout = response.timeout(conf)
        self.api = foreign.reader_engine(conf.nova.api_database_connection,
                                         "[nova] api_database_connection",
                                         self.timeout)
        self.cells: dict[str, Cell] = {}
        self.engines: dict[str, sa.Engine] = {}

    def check(self) -> list[str]:
        """That the API database and every enabled cell's are nova's, at
        nova 34's schema or later, and can be read.

        :returns: the cells' labels (``cell1 (uuid)``).
        :raises ConfigError: one line naming the database and the fix.
        """
        try:
            with self.api.connect() as conn:
                schema.check(conn, "[nova] api_database_connection",
                             schema.API_TABLES, schema.api_version,
                             schema.API_REVISIONS,
                             "run 'nova-manage api_db sync' with nova 34")
        except READ_ERRORS as e:
            raise exception.ConfigError(
                f"[nova] api_database_connection: cannot read nova's API "
                f"database ({why(e)}); check the URL and that its server "
                f"is up") from None
        self.read_cells(strict=True)
        return [cell.label for cell in self.cells.values()]

    def read_reports(self) -> dict[str, sa.Row]:
        """Every reported node of every enabled cell, by uuid, read now
        (``allocations audit``).

        :raises ConfigError: a database that cannot be read, naming it.
        """
        self.check()
        reports = {}
        for uuid, cell in sorted(self.cells.items()):
            try:
                with self.engines[uuid].connect() as conn:
                    rows = reading.nodes(conn, None)
            except READ_ERRORS as e:
                raise exception.ConfigError(
                    f"cell {cell.label} is not answering ({why(e)})"
                ) from None
            reports.update((row.uuid, row) for row in rows
                           if row.uuid and not row.deleted
                           and row.free_disk_gb is not None)
        return reports

    def read_cells(self, strict: bool = False) -> None:
        """The enabled cells now: engines for new ones (schema checked),
        none for those gone. ``strict`` (start-up): a cell that cannot be
        used raises; later it is logged and skipped.
        :raises: what reading the API database raised."""
        with self.api.connect() as conn:
            found = {c.uuid: c for c in cells.enabled_cells(
                conn, self.conf.nova.cell_database_username,
                self.conf.nova.cell_database_password)}
        for uuid in list(self.cells):
            if uuid not in found or found[uuid] != self.cells[uuid]:
                LOG.info("Nova cell %s is no longer scheduled to",
                         self.cells[uuid].label)
                self.engines.pop(uuid).dispose()
                del self.cells[uuid]
        for uuid, cell in found.items():
            if uuid not in self.cells:
                self._open(cell, strict)

    def _open(self, cell: Cell, strict: bool) -> None:
        try:
            engine = foreign.reader_engine(cell.url, f"cell {cell.label}",
                                         self.timeout)
            with engine.connect() as conn:
                schema.check(conn, f"cell {cell.label}", schema.CELL_TABLES,
                             schema.cell_version, schema.CELL_REVISIONS,
                             "run 'nova-manage db sync' with nova 34 for it")
        except exception.ConfigError as e:
            if strict:
                raise
            LOG.error("%s", e)
            return
        except READ_ERRORS as e:
            line = (f"cell {cell.label}: its database cannot be read "
                    f"({why(e)}); check its database_connection "
                    f"(nova-manage cell_v2 list_cells --verbose) and that "
                    f"its server is up")
            if strict:
                raise exception.ConfigError(line) from None
            LOG.error("%s", line)
            return
        LOG.info("Nova cell %s is scheduled to", cell.label)
        self.cells[cell.uuid] = cell
        self.engines[cell.uuid] = engine

    def close(self) -> None:
        """Give back every connection."""
        for engine in self.engines.values():
            engine.dispose()
        self.api.dispose()
