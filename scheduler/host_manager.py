"""HostManager: host states read from SQL, kept fresh at the cost of what
changed.

Services join compute nodes by host name (nova's rule: one service may own
many nodes). A node without a service row is skipped, with a warning the
first time. A service is up when it is not forced down and its last
heartbeat, by the database's clock, is younger than ``[scheduler]
service_down_time``. Disabled services stay in the table (ComputeFilter
rejects them, forcing may still pick them).

A refresh first reads the change counters (one row). Rows stamped since the
last refresh are re-read, and only those hosts' states rebuilt; a deleted
node (or any hard DELETE) makes it a full read. Liveness is not tracked by
writes — heartbeats would rewrite every row every few seconds — but read as
"which services are down", at most every ``LIVENESS_INTERVAL`` seconds.
"""
from __future__ import annotations

import collections
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import claims
from scheduler.db import api as db
from scheduler.db import rows
from scheduler.host_state import HostState
from scheduler.host_table import HostTable

LOG = logging.getLogger(__name__)

#: Seconds between reads of which services are down.
LIVENESS_INTERVAL = 1.0


class HostManager:
    def __init__(self, conf: cfg.ConfigOpts, engine: sa.Engine):
        self.conf = conf
        self.engine = engine
        self._lock = threading.Lock()
        self._table = HostTable([])
        self._counters: sa.Row | None = None
        self._node_rows: dict[int, sa.Row] = {}
        self._services: dict[str, sa.Row] = {}
        self._aggregates: dict[str, list] = {}
        self._down: set[str] = set()
        self._node_seq = 0
        self._service_seq = 0
        self._liveness_at = float("-inf")
        self.liveness_interval = LIVENESS_INTERVAL
        self._warned_hosts: set[str] = set()

    # -- what drivers use ---------------------------------------------

    def table(self) -> HostTable:
        """Refresh, then the current table."""
        self.refresh()
        return self._table

    def cached_table(self) -> HostTable:
        """The current table without touching SQL (read once if empty)."""
        if self._counters is None:
            self.refresh()
        return self._table

    def host_states(self) -> list[HostState]:
        """Refresh, then every host state (a list copy)."""
        return list(self.table().states)

    def group_hosts(self, group_uuid: str, exclude: list[str] = ()
                    ) -> collections.Counter:
        """host -> members of the server group claimed on it, leaving out
        the consumers in ``exclude``."""
        with self.engine.connect() as conn:
            return claims.group_hosts(conn, group_uuid, exclude)

    def claimed(self, states: list[HostState]) -> None:
        """This process claimed on these hosts: put their new states in the
        table now (usage planned, generation bumped once by the claim),
        without waiting for the next read."""
        with self._lock:
            table = self._table
            for state in states:
                i = table.positions.get(state.node_id)
                if i is not None:
                    table.set(i, state)

    # -- reading SQL ----------------------------------------------------

    def refresh(self, full: bool = False) -> int:
        """Bring the table up to date with SQL.

        :param full: re-read everything (what a periodic task does, and what
            happens by itself when nodes were deleted).
        :returns: how many node states were rebuilt.
        """
        with self._lock, self.engine.connect() as conn:
            counters = db.change_counters(conn)
            seen = self._counters
            if full or seen is None or counters.node_deletes != \
                    seen.node_deletes:
                return self._read_all(conn, counters)
            dirty_hosts: set[str] = set()
            dirty_nodes: set[int] = set()
            structural = False
            if counters.aggregates != seen.aggregates:
                old = self._aggregates
                self._aggregates = db.aggregates_by_host(conn)
                dirty_hosts |= {h for h in old.keys() | self._aggregates.keys()
                                if old.get(h) != self._aggregates.get(h)}
            if counters.services != seen.services:
                for row in db.compute_services(conn, self._service_seq):
                    self._service_seq = max(self._service_seq,
                                            row.change_seq)
                    had = row.host in self._services
                    if row.deleted:
                        self._services.pop(row.host, None)
                    else:
                        self._services[row.host] = row
                    structural |= had != (row.host in self._services)
                    dirty_hosts.add(row.host)
            if counters.nodes != seen.nodes:
                for row in db.compute_nodes(conn, self._node_seq):
                    self._node_seq = max(self._node_seq, row.change_seq)
                    had = row.id in self._node_rows
                    if row.deleted:
                        self._node_rows.pop(row.id, None)
                    else:
                        self._node_rows[row.id] = row
                    structural |= had != (row.id in self._node_rows)
                    dirty_nodes.add(row.id)
            if time.monotonic() - self._liveness_at >= \
                    self.liveness_interval:
                down = self._read_liveness(conn)
                dirty_hosts |= down ^ self._down
                self._down = down
            self._counters = counters
            if structural:
                self._rebuild()
                return len(self._table)
            return self._update(dirty_hosts, dirty_nodes)

    def _read_all(self, conn: sa.Connection, counters: sa.Row) -> int:
        node_rows = db.compute_nodes(conn)
        service_rows = db.compute_services(conn)
        self._node_rows = {row.id: row for row in node_rows}
        self._services = {row.host: row for row in service_rows}
        self._node_seq = max((r.change_seq for r in node_rows), default=0)
        self._service_seq = max((r.change_seq for r in service_rows),
                                default=0)
        self._aggregates = db.aggregates_by_host(conn)
        self._down = self._read_liveness(conn)
        self._counters = counters
        self._rebuild()
        return len(self._table)

    def _read_liveness(self, conn: sa.Connection) -> set[str]:
        self._liveness_at = time.monotonic()
        return db.down_hosts(conn, self.conf.scheduler.service_down_time)

    def _state(self, row: sa.Row) -> HostState | None:
        service = self._services.get(row.host)
        if service is None:
            if row.host not in self._warned_hosts:
                self._warned_hosts.add(row.host)
                LOG.warning("No compute service record found for host %s; "
                            "its nodes are not scheduled to", row.host)
            return None
        return rows.host_state(self.conf, row, service,
                               self._aggregates.get(row.host, ()),
                               row.host not in self._down)

    def _rebuild(self) -> None:
        """A new table from the rows (hosts were added or removed)."""
        states = [self._state(row) for row in self._node_rows.values()]
        self._table = HostTable(s for s in states if s is not None)

    def _update(self, dirty_hosts: set[str], dirty_nodes: set[int]) -> int:
        """Rebuild the states of changed nodes and hosts in place."""
        table = self._table
        if dirty_hosts:
            dirty_nodes |= {s.node_id for s in table.states
                            if s.host in dirty_hosts}
        for node_id in dirty_nodes:
            i = table.positions.get(node_id)
            row = self._node_rows.get(node_id)
            if i is not None and row is not None:
                table.set(i, self._state(row))
        return len(dirty_nodes)
