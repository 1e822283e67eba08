"""HostManager: host states read from SQL, kept fresh at the cost of what
changed.

Services join compute nodes by host name (nova's rule: one service may own
many nodes). A node without a service row is skipped, with a warning the
first time. A service is up when it is not forced down and its last
heartbeat, by the database's clock, is younger than ``[scheduler]
service_down_time``. Disabled services stay in the table (ComputeFilter
rejects them; as in nova 34, a forced host must be enabled too).

A decision runs inside :meth:`HostManager.planning`, one scheduling cycle
per process at a time (kube-scheduler's): refresh, plan and *assume* (put the
planned usage in the table) are one serial step, and only the SQL claim runs
outside it. So no planner sees a table half-way through a refresh, and the
next request of this process plans on the usage the previous one just
planned instead of racing it for the same host. A failed claim *forgets*
its assumption by re-reading those nodes.

A plan made on an assumed state counts on that claim, so a claim planned
on another claim of this process still in flight waits for it and is lost
with it (:mod:`scheduler.hosts.in_flight`).

Requests that queue for the cycle share refreshes: a request needs the
table as fresh as SQL was when it arrived, so a refresh that *began* after
it arrived (another queued request's) is enough and it does not read
again. Under load one refresh serves every request that queued behind it;
alone, every request still reads.

A refresh first reads the change counters and, in the same statement, the
node rows stamped since the last refresh; only those hosts' states are
rebuilt. A deleted node (or any hard DELETE), a compute service deleted,
created or renamed, or a node that moved to another host or name makes it
a full read (or a new table): which nodes a host has changes, and names are
columns and indexes of their own.
Liveness is not tracked by writes — heartbeats would rewrite every row
every few seconds — but read as "which services are down", at most every
``LIVENESS_INTERVAL`` seconds (or asked of :attr:`HostManager.external`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from typing import Callable, Iterator, TypeVar

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler.hosts import capacity
from scheduler.hosts.planned import Claim
from scheduler import errors
from scheduler.hosts import liveness
from scheduler import metrics
from scheduler import trace
from scheduler.db import compute
from scheduler.db import kept
from scheduler.db import retry as db_retry
from scheduler.hosts import in_flight
from scheduler.hosts import rows
from scheduler.hosts.state import Aggregate
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable

LOG = logging.getLogger(__name__)

#: Seconds between reads of which services are down.
LIVENESS_INTERVAL = 1.0

T = TypeVar("T")


class HostManager:
    def __init__(self, conf: cfg.ConfigOpts, engine: sa.Engine):
        self.conf = conf
        self.engine = engine
        #: The ratios of nodes without their own: what host states are
        #: built with and what claims fall back to. Read once: not mutable
        #: on SIGHUP, and a node's state is built on every refresh.
        self.default_ratios = capacity.Ratios.from_conf(conf)
        # The scheduling cycle: whoever holds it may read and change the
        # table (re-entrant: refresh() runs inside planning()).
        self._cycle = threading.RLock()
        self._table = HostTable([])
        # The cycle's own connection (see _reading), made on first use: in
        # the worker process, never inherited across a fork.
        self._conn = kept.KeptConnection(engine, autocommit=True)
        # None: read everything next time (never read, or a refresh failed
        # half-way).
        self._counters: compute.Counters | None = None
        self._skipped_hosts: set[str] = set()
        self._services: dict[str, sa.Row] = {}
        self._aggregates: dict[str, list] = {}
        self._down: set[str] = set()
        self._node_seq = 0
        self._service_seq = 0
        # The kept connection's connects at the last full read (_refresh).
        self._read_all_on = 0
        self._liveness_at = float("-inf")
        self.liveness_interval = LIVENESS_INTERVAL
        self.assumed_wait = in_flight.assumed_wait(conf)
        self._warned_hosts: set[str] = set()
        # Refreshes begun so far, and the number of the latest one that
        # completed: a request that arrived when ``_refreshes_begun`` was
        # N is served by any completed refresh numbered above N.
        self._refreshes_begun = 0
        self._fresh_from = 0
        self._in_flight = in_flight.InFlight()
        #: Nova's cells, when they are the host source (set by the worker).
        self.external: liveness.External | None = None
        #: What every refusal adds: the hosts the source could not see.
        self.unavailable: str | None = None

    # -- what drivers use ---------------------------------------------

    @contextlib.contextmanager
    def planning(self, refresh: bool = True) -> Iterator[HostTable]:
        """One scheduling cycle: the table, refreshed from SQL first (or,
        with ``refresh`` False, as cached — read once if empty), for the
        caller alone until the block ends. Plan and :meth:`assume` inside
        it; claim in SQL after it. A refresh that began after this call
        (while it waited for the cycle) counts as its own."""
        arrived = self._refreshes_begun
        with self._cycle:
            if self._counters is None or (
                    refresh and self._fresh_from <= arrived):
                started = time.perf_counter()
                # A request's refresh waits out a database restart as its
                # claim does; the worker's first load and the periodic
                # refresh call refresh() itself and fail at once.
                db_retry.for_conf(self.conf)(self.refresh)()
                trace.add(trace.REFRESH, time.perf_counter() - started)
            yield self._table

    def table(self) -> HostTable:
        """Refresh, then the current table: for looking at (tests, tools).
        It may change once this returns; decisions use :meth:`planning`."""
        with self.planning() as table:
            return table

    def cached_table(self) -> HostTable:
        """The current table without touching SQL (read once if empty), for
        looking at; decisions use :meth:`planning`."""
        with self.planning(refresh=False) as table:
            return table

    def host_states(self) -> list[HostState]:
        """Refresh, then every host state (a list copy)."""
        with self.planning() as table:
            return list(table.states)

    def assume(self, states: list[HostState]) -> None:
        """This process is about to claim on these hosts: put their states
        after the claim in the table now (usage planned, generation bumped
        once by the claim), so the next decision plans on them. Call inside
        :meth:`planning`; :meth:`forget` them if the claim fails, and
        :meth:`settle` the claim once it is over, won or lost, always."""
        with self._cycle:
            table = self._table
            for state in states:
                self._in_flight.add(state.node_id, state.generation)
                i = table.positions.get(state.node_id)
                if i is not None:
                    table.set(i, state)

    def await_assumed(self, to_claim: list[Claim]) -> None:
        """Before claiming ``to_claim``: wait for the claims of this
        process whose assumed states it was planned on (a node at the
        generation such a claim is to leave) to be over.
        :raises ClaimConflict: one of them was lost: the generation the
            plan counted on will be someone else's, if any (call
            :meth:`forget`, plan again); or was not over within
            :attr:`assumed_wait` seconds (see
            :func:`~scheduler.hosts.in_flight.assumed_wait`)."""
        self._in_flight.wait_for(to_claim, self.assumed_wait)

    def settle(self, to_claim: list[Claim], won: bool) -> None:
        """The claim of ``to_claim``, assumed by :meth:`assume` (one
        generation bump per node), is over: let the claims planned on it
        go on (``won``) or lose. Call in the thread that assumed it."""
        self._in_flight.settle(to_claim, won)

    def forget(self, node_ids: list[int]) -> None:
        """A claim on these nodes failed: put them back as SQL has them
        (dropping what was assumed). If SQL cannot be read (the outage that
        failed the claim), the next cycle reads everything instead; the
        claim's own error is what the caller sees."""
        with self._cycle:
            table = self._table
            try:
                rows = self._reading(
                    lambda conn: compute.compute_nodes(conn, ids=node_ids))
            except (sa.exc.SQLAlchemyError, db_exc.DBError) as e:
                # What was assumed cannot be read back (the database is
                # away). An incremental refresh re-reads only nodes SQL
                # changed, so it would keep the assumed usage for good:
                # the next cycle reads everything instead.
                self._counters = None
                LOG.warning("Could not read back nodes %s after a failed "
                            "claim (%s); the next refresh reads all",
                            node_ids, errors.one_line(e, self.conf))
                return
            for row in rows:
                i = table.positions.get(row.id)
                if i is None:
                    continue
                state = self._state(row)
                if (state is None or state.host != table.states[i].host
                        or state.nodename != table.states[i].nodename):
                    self._counters = None   # the next cycle reads it all
                else:
                    table.set(i, state)

    # -- reading SQL ----------------------------------------------------

    def refresh(self, full: bool = False) -> int:
        """Bring the table up to date with SQL.

        :param full: re-read everything (what a periodic task does, and what
            happens by itself when nodes were hard-deleted).
        :returns: how many node states were rebuilt.
        """
        with self._cycle:
            self._refreshes_begun += 1
            begun = self._refreshes_begun
            rebuilt = self._reading(lambda conn: self._refresh(conn, full))
            self._fresh_from = begun
        metrics.host_table(len(self._table))
        return rebuilt

    def close(self) -> None:
        """Give back the connection refreshes keep (at shutdown)."""
        with self._cycle:
            self._conn.close()

    def _reading(self, read: Callable[[sa.Connection], T]) -> T:
        """``read(conn)`` on the cycle's own kept connection; call with the
        cycle held.

        Every request refreshes, usually in one statement; the kept
        connection spares it a checkout, and on PostgreSQL and MySQL a
        ping, BEGIN and ROLLBACK. It runs in autocommit: every statement is
        its own snapshot, as under READ COMMITTED anyway, and on SQLite no
        read transaction outlives its statement to hold back WAL
        checkpoints. A refresh's statements need no common snapshot: the
        counters come first (with the changed node rows, in one statement),
        and whatever is read after them is at least as new, which at worst
        makes the next refresh read some rows again.
        """
        return self._conn.run(read)

    def _refresh(self, conn: sa.Connection, full: bool) -> int:
        seen = self._counters
        # On a new connection the database may be another (a standby
        # promoted) or have lost commits (restored, crashed unflushed): its
        # counters may count again below what was seen. Read it all.
        if full or seen is None or self._conn.connects != self._read_all_on:
            return self._read_all(conn, compute.changes(conn)[0])
        counters, node_rows = compute.changes(conn, self._node_seq)
        if counters.node_deletes != seen.node_deletes:
            return self._read_all(conn, counters)
        # From here on the state below is changed piece by piece; if a
        # read fails half-way, the next refresh must read everything.
        self._counters = None
        table = self._table
        changed: dict[int, HostState] = {}   # position -> new state
        added: list[HostState] = []
        removed: set[int] = set()            # node ids
        zones_changed = False

        # Liveness first: the service and node rows below are turned
        # into states with the down set as it is now — a node added in
        # this refresh must not get the old one.
        if time.monotonic() - self._liveness_at >= \
                self.liveness_interval:
            down = self._read_liveness(conn)
            for host in down ^ self._down:
                for i in table.positions_of(host):
                    changed[i] = dataclasses.replace(
                        table.states[i], service_up=host not in down)
            self._down = down

        if counters.services != seen.services:
            for row in compute.compute_services(conn, self._service_seq):
                if row.deleted or row.host not in self._services:
                    # A service deleted, created (again) or renamed: which
                    # nodes have a service changes. Rare: read it all.
                    return self._read_all(conn, counters)
                self._service_seq = max(self._service_seq,
                                        row.change_seq)
                self._services[row.host] = row
                for i in table.positions_of(row.host):
                    changed[i] = self._with_service(
                        changed.get(i, table.states[i]), row)
        if counters.aggregates != seen.aggregates:
            old = self._aggregates
            self._aggregates = rows.aggregates_by_host(
                compute.aggregates(conn))
            for host in old.keys() | self._aggregates.keys():
                if old.get(host) == self._aggregates.get(host):
                    continue
                zones_changed = True
                for i in table.positions_of(host):
                    changed[i] = dataclasses.replace(
                        changed.get(i, table.states[i]),
                        aggregates=self._aggregate_tuple(host))
        for row in node_rows:
            self._node_seq = max(self._node_seq, row.change_seq)
            i = table.positions.get(row.id)
            if row.deleted:
                removed.add(row.id)
                continue
            state = self._state(row)
            if state is None:
                if i is not None:     # moved to a host without a service
                    removed.add(row.id)
                continue
            if i is None:
                added.append(state)
            elif (state.host != table.states[i].host
                  or state.nodename != table.states[i].nodename):
                # Names are columns and indexes of their own: rebuild.
                removed.add(row.id)
                added.append(state)
            else:
                changed[i] = state
        self._counters = counters

        if added or removed:
            states = list(table.states)
            for i, state in changed.items():
                states[i] = state
            states = [s for s in states if s.node_id not in removed]
            self._table = HostTable(states + added)
            return len(self._table)
        for i, state in changed.items():
            table.set(i, state)
        if zones_changed:
            table.rebuild_zones()
        return len(changed)

    def _read_all(self, conn: sa.Connection,
                  counters: compute.Counters) -> int:
        self._counters = None     # until everything below is read
        node_rows = compute.compute_nodes(conn)
        service_rows = compute.compute_services(conn)
        self._services = {row.host: row for row in service_rows}
        self._node_seq = max((r.change_seq for r in node_rows), default=0)
        self._service_seq = max((r.change_seq for r in service_rows),
                                default=0)
        self._aggregates = rows.aggregates_by_host(
            compute.aggregates(conn))
        self._down = self._read_liveness(conn)
        self._skipped_hosts = set()
        states = (self._state(row) for row in node_rows)
        self._table = HostTable(s for s in states if s is not None)
        self._counters = counters     # only once the table is built
        self._read_all_on = self._conn.connects
        return len(self._table)

    def _read_liveness(self, conn: sa.Connection) -> set[str]:
        self._liveness_at = time.monotonic()
        if self.external is not None:
            down, self.unavailable = self.external.liveness()
            return down
        return liveness.down_hosts(conn,
                                   self.conf.scheduler.service_down_time)

    def _aggregate_tuple(self, host: str) -> tuple[Aggregate, ...]:
        return self._aggregates.get(host, ())

    def _with_service(self, state: HostState, service: sa.Row) -> HostState:
        return dataclasses.replace(
            state, service_disabled=bool(service.disabled),
            disabled_reason=service.disabled_reason,
            service_up=not service.forced_down and state.host not in
            self._down)

    def _state(self, row: compute.NodeRow) -> HostState | None:
        service = self._services.get(row.host)
        if service is None:
            self._skipped_hosts.add(row.host)
            if row.host not in self._warned_hosts:
                self._warned_hosts.add(row.host)
                LOG.warning("No compute service record found for host %s; "
                            "its nodes are not scheduled to", row.host)
            return None
        return rows.host_state(row, service,
                               self._aggregates.get(row.host, ()),
                               row.host not in self._down,
                               self.default_ratios)
