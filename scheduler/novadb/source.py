"""NovaSource: nova's API and cell databases read into our mirror, every
``[nova] sync_interval`` seconds, by what changed.

One cycle (:meth:`NovaSource.sync`):

1. the API database: host mappings and aggregates (and one more per
   cell, of its hosts: what a request kept in a cell asks for);
2. our claims whose inclusion in a report is still to be seen;
3. per cell, in this order: those claims' instances and migrations, then
   the node rows written since the last read (with a margin), then its
   compute services (liveness, on the cell database's clock);
4. the verdicts (:mod:`scheduler.novadb.included`) and the writes
   (:mod:`scheduler.novadb.mirror`): nodes changed or whose claims'
   verdicts changed, services, aggregates.

A cell that does not answer is skipped: its hosts count as down and every
refusal says why (:meth:`NovaSource.liveness`); the others are served.
What a read found is kept only once its writes are done: a cycle that
fails half-way leaves the next one to read everything again.

What request threads ask (:meth:`liveness`, :meth:`cell_of`) is one
immutable answer, swapped whole at the end of a cycle.
"""
from __future__ import annotations

import dataclasses
import datetime
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import exception
from scheduler import metrics
from scheduler.db import clock
from scheduler.hosts import liveness
from scheduler.novadb import included
from scheduler.novadb import mirror
from scheduler.novadb import reading
from scheduler.novadb.cycle import CellsRead
from scheduler.novadb.cycle import Hosts
from scheduler.novadb.cycle import Wanted
from scheduler.novadb.databases import NovaDatabases
from scheduler.db.foreign import READ_ERRORS
from scheduler.db.foreign import why

LOG = logging.getLogger(__name__)

#: Node rows written this long before the last read are read again: nova
#: stamps rows by its conductor's clock, before its commit.
SLACK = datetime.timedelta(seconds=30)
@dataclasses.dataclass(frozen=True)
class Answer:
    """What request threads read: swapped whole, never changed."""
    #: Hosts whose compute service is down by nova's rule, or whose cell
    #: is not answering.
    down: frozenset[str] = frozenset()
    #: host -> the uuid of the cell its nodes were read from.
    cells: dict[str, str] = dataclasses.field(default_factory=dict)
    #: One line per cell not answering (or hosts not mapped).
    problems: tuple[str, ...] = ()
    #: The uuids of the cells not answering.
    failed: tuple[str, ...] = ()


class NovaSource:
    """Nova's databases mirrored into ours; see the module docstring."""

    def __init__(self, conf: cfg.ConfigOpts, engine: sa.Engine) -> None:
        """``engine``: our own database's, which the mirror is written
        to."""
        self.conf = conf
        self.engine = engine
        self.databases = NovaDatabases(conf)
        self._cells_read_at = float("-inf")
        self._lock = threading.Lock()
        self._answer = Answer()
        self._forget()

    def _forget(self) -> None:
        """Read everything again next cycle."""
        self._since: dict[str, datetime.datetime] = {}
        #: node uuid -> (cell uuid, its row as last written to ours).
        self._reports: dict[str, tuple[str, sa.Row]] = {}
        self._ours: dict[str, int] | None = None
        self._services: dict[str, mirror.ServiceState] | None = None
        self._aggregates: dict[str, reading.Aggregate] | None = None
        #: The API database's fingerprint, host mappings and aggregates.
        self._api: tuple[tuple, dict, dict] | None = None
        #: Each cell's hosts and cell aggregates, made again when nodes
        #: come or go.
        self._hosts: Hosts | None = None
        #: cell uuid -> its compute services' hosts at the last full read,
        #: and when that was (monotonic).
        self._cell_services: dict[str, set[str]] = {}
        self._services_read_at: dict[str, float] = {}

    # -- what the rest of the service asks ------------------------------

    def liveness(self) -> tuple[set[str], str | None]:
        """The hosts down now, and a note for refusals (the cells not
        answering), or None."""
        answer = self._answer
        note = "; ".join(answer.problems) or None
        return set(answer.down), note

    def cell_of(self, host: str) -> str | None:
        """The uuid of the cell of ``host``, as its node was read."""
        return self._answer.cells.get(host)

    def instance_hosts(self, uuids: list[str]) -> dict[str, str]:
        """uuid -> the host of each of ``uuids`` that nova's answering
        cells have live on a host (for ``same_host`` / ``different_host``
        hints naming instances this service holds no claim for)."""
        out: dict[str, str] = {}
        for cell, engine in sorted(dict(self.databases.engines).items()):
            try:
                with engine.connect() as conn:
                    rows = reading.instances(conn, uuids)
            except READ_ERRORS as e:
                LOG.warning("Cell %s not read for hinted instances: %s",
                            cell, why(e))
                continue
            out.update((u, r.host) for u, r in rows.items()
                       if r.host and not r.deleted)
        return out

    def check(self) -> None:
        """At start: :meth:`NovaDatabases.check`.
        :raises ConfigError: naming the database and the fix."""
        self.databases.check()
        self._cells_read_at = time.monotonic()

    def reload(self) -> None:
        """Read the cell mappings again at the next cycle (SIGHUP)."""
        self._cells_read_at = float("-inf")

    def close(self) -> None:
        """Give back every connection (at shutdown)."""
        with self._lock:
            self.databases.close()

    # -- the cycle ------------------------------------------------------

    def run(self, stopped: threading.Event) -> None:
        """Sync every ``[nova] sync_interval`` seconds until ``stopped``.
        A failed cycle is one log line (with its traceback only if it is
        not a database's error: a bug); the next one reads everything."""
        while not stopped.wait(self.conf.nova.sync_interval):
            try:
                self.sync()
            except (exception.SchedulerException, *READ_ERRORS) as e:
                LOG.warning("Reading nova's databases failed: %s; "
                            "trying again", why(e))
            except Exception:
                LOG.exception("Reading nova's databases failed")

    def sync(self) -> None:
        """One cycle; see the module docstring.
        :raises: what reading the API database or writing ours raised
            (everything is read again next time)."""
        with self._lock:
            started = time.perf_counter()
            try:
                self._sync()
            except BaseException:
                self._forget()
                raise
            metrics.nova_sync(time.perf_counter() - started,
                              [c for c in self._answer.failed])

    def _sync(self) -> None:
        databases = self.databases
        refresh = self.conf.nova.cell_refresh_interval
        if time.monotonic() - self._cells_read_at >= refresh:
            databases.read_cells()
            self._cells_read_at = time.monotonic()
        mapped, aggregates = self._read_api()
        with self.engine.connect() as conn:
            if self._ours is None:
                self._ours = mirror.our_nodes(conn)
                self._services = mirror.our_services(conn)
            unseen = mirror.unseen_claims(conn)
        by_id = {i: u for u, i in self._ours.items()}
        wanted = Wanted({c.consumer_uuid for c in unseen},
                        {c.consumer_uuid for c in unseen
                         if c.source_node_id is not None})

        reports = dict(self._reports)
        changed: set[str] = set()        # node uuids
        deleted: set[str] = set()
        for node, (cell_uuid, _) in list(reports.items()):
            if cell_uuid not in databases.cells:     # a cell disabled
                deleted.add(node)
                del reports[node]
        read = CellsRead()
        for uuid, cell in sorted(databases.cells.items()):
            try:
                self._read_cell(uuid, wanted, reports, changed, deleted,
                                read)
            except READ_ERRORS as e:
                read.problems[uuid] = (f"cell {cell.label} is not "
                                       f"answering ({why(e)}): its hosts "
                                       f"were skipped")

        if changed or deleted or self._hosts is None:
            self._hosts = Hosts.of(reports, databases.cells)
        hosts = self._hosts
        down = read.down | {h for h, c in hosts.cell_of.items()
                            if c in read.problems}
        problems = dict(read.problems)
        unmapped = hosts.unmapped(mapped)
        if unmapped:
            # Nova's conductor cannot find such a host in its host
            # mappings and fails the build there: not placed on.
            down.update(unmapped)
            problems["unmapped"] = (
                f"{len(unmapped)} host(s) not mapped to their cell "
                f"({', '.join(unmapped[:3])}"
                f"{', ...' if len(unmapped) > 3 else ''}): run "
                f"'nova-manage cell_v2 discover_hosts'")

        arrived = self._arrived(unseen, by_id, reports, read.instances,
                                read.migrations)
        self._write(reports, changed, deleted, arrived, unseen)
        self._write_services(read.services, read.answered, hosts.cell_of)
        aggregates = {**aggregates, **hosts.cell_aggregates}
        if aggregates != self._aggregates:
            mirror.write_aggregates(self.engine, self._aggregates or {},
                                    aggregates)
            self._aggregates = aggregates
        self._reports = reports
        self._since.update(read.since)
        self._services_read_at.update(read.services_read_at)
        self._answer = Answer(frozenset(down), hosts.cell_of,
                              tuple(problems.values()),
                              tuple(c for c in problems
                                    if c in databases.cells))

    def _read_api(self) -> tuple[dict[str, str], dict]:
        """The API database's host mappings and aggregates, read again
        only when its fingerprint says they changed."""
        with self.databases.api.connect() as api:
            fingerprint = reading.api_fingerprint(api)
            if self._api is None or self._api[0] != fingerprint:
                self._api = (fingerprint, reading.host_cells(api),
                             reading.aggregates(api))
        return self._api[1], self._api[2]

    def _read_cell(self, uuid: str, wanted: Wanted,
                   reports: dict[str, tuple[str, sa.Row]],
                   changed: set[str], deleted: set[str],
                   read: CellsRead) -> None:
        """One cell's part of a cycle, into ``reports``, ``changed``,
        ``deleted`` and ``read``. :raises: what reading it raised."""
        down_time = self.conf.scheduler.service_down_time
        with self.databases.engines[uuid].connect() as conn:
            # Instances first, nodes after: a report read is never older
            # than the instance states that vouch for it.
            instances = reading.instances(conn, wanted.consumers)
            migrations = reading.migrations(conn, wanted.moving)
            now = clock.db_time(conn)
            node_rows = reading.nodes(conn, self._since.get(uuid))
            new_host = any(r.host not in (self._services or {})
                           for r in node_rows if not r.deleted)
            # Every service now and then, and when a host is new: those
            # not of note are enabled and up.
            full = new_host or time.monotonic() - self._services_read_at.get(
                uuid, float("-inf")) >= self.conf.nova.cell_refresh_interval
            service_rows = reading.services(
                conn, None if full else
                now - datetime.timedelta(seconds=down_time))
        read.instances.update(instances)
        read.migrations.update(migrations)
        read.answered.add(uuid)
        read.since[uuid] = now - SLACK
        for row in node_rows:
            if row.uuid is None:
                continue
            if row.deleted or row.free_disk_gb is None:
                # Deleted, or not reported yet: nova skips it too.
                if row.uuid in reports:
                    deleted.add(row.uuid)
                    del reports[row.uuid]
                continue
            known = reports.get(row.uuid)
            if known is None or known[1] != row:
                reports[row.uuid] = (uuid, row)
                changed.add(row.uuid)
        if full:
            read.services_read_at[uuid] = time.monotonic()
            self._cell_services[uuid] = {r.host for r in service_rows}
        read.services.update(dict.fromkeys(
            self._cell_services.get(uuid, ()), mirror.ENABLED))
        for row in service_rows:
            read.services[row.host] = mirror.service_state(row)
            seen = row.last_seen_up or row.created_at
            age = None if seen is None else (now - seen).total_seconds()
            if not liveness.is_up(bool(row.forced_down), age, down_time):
                read.down.add(row.host)

    def _arrived(self, unseen: list[sa.Row], by_id: dict[int, str],
                 reports: dict[str, tuple[str, sa.Row]],
                 instances: dict[str, sa.Row],
                 migrations: dict[str, sa.Row]) -> set[tuple[str, int]]:
        """(consumer uuid, node id) of the claims of ``unseen`` whose
        node's report includes them now."""
        arrived = set()
        for c in unseen:
            node = reports.get(by_id.get(c.compute_node_id, ""))
            if node is None:
                continue
            instance = instances.get(c.consumer_uuid)
            if c.source_node_id is None:
                there = included.claim_included(instance, node[1])
            else:
                there = included.arrival_included(
                    instance, migrations.get(c.consumer_uuid), node[1])
            if there:
                arrived.add((c.consumer_uuid, c.compute_node_id))
        return arrived

    def _write(self, reports: dict[str, tuple[str, sa.Row]],
               changed: set[str], deleted: set[str],
               arrived: set[tuple[str, int]], unseen: list[sa.Row]) -> None:
        assert self._ours is not None
        new = [reports[u][1] for u in sorted(changed)
               if u not in self._ours]
        if new:
            mirror.add_nodes(self.engine, new)
            with self.engine.connect() as conn:
                self._ours = mirror.our_nodes(conn)
        gone = [self._ours.pop(u) for u in sorted(deleted)
                if u in self._ours]
        if gone:
            mirror.delete_nodes(self.engine, gone)
        # Nodes whose usage changes: their report, or a claim seen in it
        # now, or a move's source to mark as its report's.
        to_write = {self._ours[u] for u in changed if u in self._ours}
        to_write.update(n for _, n in arrived)
        to_write.update(c.source_node_id for c in unseen
                        if c.source_node_id is not None)
        node_reports = {node_id: reports[uuid][1]
                        for uuid, node_id in self._ours.items()
                        if node_id in to_write and uuid in reports}
        if node_reports:
            mirror.write_nodes(self.engine, node_reports, arrived)

    def _write_services(self, services: dict[str, mirror.ServiceState],
                        answered: set[str], cell_of: dict[str, str]
                        ) -> None:
        assert self._services is not None
        ours = self._services
        new = {h: s for h, s in services.items() if h not in ours}
        changed = {h: s for h, s in services.items()
                   if h in ours and ours[h] != s}
        # Gone only if its cell answered: a cell away keeps its services.
        gone = [h for h in ours if h not in services
                and cell_of.get(h) in answered | {None}]
        if new or changed or gone:
            mirror.write_services(self.engine, new, changed, gone)
            self._services = {**{h: s for h, s in ours.items()
                                 if h not in gone}, **new, **changed}
