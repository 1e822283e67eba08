"""HostManager: host states read from SQL.

Services join compute nodes by host name (nova's rule: one service may own
many nodes). A node without a service row is skipped, with a warning the
first time; a service is up when its last heartbeat, by the database's clock,
is younger than ``[scheduler] service_down_time`` and it is not forced down.
Disabled services stay in the map (ComputeFilter rejects them, forcing may
still pick them). Nodes deleted from SQL are gone after the next refresh.
"""
from __future__ import annotations

import collections
import datetime
import json
import math
import threading

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import claims
from scheduler.db import api as db
from scheduler.host_state import Aggregate
from scheduler.host_state import HostState
from scheduler.host_state import Key

LOG = logging.getLogger(__name__)


class HostManager:
    def __init__(self, conf: cfg.ConfigOpts, engine: sa.Engine):
        self.conf = conf
        self.engine = engine
        self._lock = threading.Lock()
        self._states: dict[Key, HostState] = {}
        self._warned_hosts: set[str] = set()

    def host_states(self) -> list[HostState]:
        """Read every live node from SQL and return fresh host states."""
        with self.engine.connect() as conn:
            now = db.db_time(conn)
            services = db.compute_services(conn)
            nodes = db.compute_nodes(conn)
            aggregates = db.aggregates_by_host(conn)
        states = []
        for row in nodes:
            service = services.get(row.host)
            if service is None:
                if row.host not in self._warned_hosts:
                    self._warned_hosts.add(row.host)
                    LOG.warning("No compute service record found for host "
                                "%s; its nodes are not scheduled to",
                                row.host)
                continue
            states.append(self._host_state(row, service,
                                           aggregates.get(row.host, ()), now))
        with self._lock:
            self._states = {s.key: s for s in states}
        return states

    def group_hosts(self, group_uuid: str, exclude: list[str] = ()
                    ) -> collections.Counter:
        """host -> members of the server group claimed on it, leaving out
        the consumers in ``exclude``."""
        with self.engine.connect() as conn:
            return claims.group_hosts(conn, group_uuid, exclude)

    def cached_states(self) -> list[HostState]:
        """The host states of the last refresh (reading SQL if none yet)."""
        with self._lock:
            states = list(self._states.values())
        return states or self.host_states()

    def update_cached(self, states: list[HostState]) -> None:
        """Put states this process planned and claimed into the cache, so
        its own claims are visible without a refresh."""
        with self._lock:
            for state in states:
                if state.key in self._states:
                    self._states[state.key] = state

    def _host_state(self, row: sa.Row, service: sa.Row,
                    aggregates, now: datetime.datetime) -> HostState:
        fs = self.conf.filter_scheduler
        stats = _stats(row.stats)
        return HostState(
            node_id=row.id, uuid=row.uuid, host=row.host,
            nodename=row.hypervisor_hostname or row.host,
            generation=row.generation,
            vcpus_total=row.vcpus, vcpus_used=row.vcpus_used,
            memory_mb_total=row.memory_mb, memory_mb_used=row.memory_mb_used,
            disk_gb_total=row.local_gb, disk_gb_used=row.local_gb_used,
            # 0 or NULL on the node means "not set": use ours (nova's rule).
            cpu_allocation_ratio=row.cpu_allocation_ratio
            or fs.cpu_allocation_ratio,
            ram_allocation_ratio=row.ram_allocation_ratio
            or fs.ram_allocation_ratio,
            disk_allocation_ratio=row.disk_allocation_ratio
            or fs.disk_allocation_ratio,
            service_up=self._is_up(service, now),
            service_disabled=bool(service.disabled),
            disabled_reason=service.disabled_reason,
            aggregates=tuple(Aggregate(*agg) for agg in aggregates),
            num_instances=int(stats.get("num_instances",
                                        row.running_vms or 0)),
            num_io_ops=int(stats.get("io_workload",
                                     row.current_workload or 0)),
            host_ip=row.host_ip, hypervisor_type=row.hypervisor_type,
            hypervisor_version=row.hypervisor_version or 0, stats=stats,
            supported_instances=_supported_instances(
                row.supported_instances),
            metrics=_metrics(row.metrics), cpu_info=_stats(row.cpu_info),
            failed_builds=_int(stats.get("failed_builds")))

    def _is_up(self, service: sa.Row, now: datetime.datetime) -> bool:
        if service.forced_down:
            return False
        heartbeat = (service.last_seen_up or service.updated_at
                     or service.created_at)
        if heartbeat is None:
            return False
        age = (now - heartbeat).total_seconds()
        return age <= self.conf.scheduler.service_down_time


def _stats(raw: str | None) -> dict:
    """A JSON object column (``stats``, ``cpu_info``); anything else is {}."""
    if not raw or raw == "{}":
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _json_list(raw: str | None) -> list:
    if not raw or raw == "[]":
        return []
    try:
        value = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return []
    return value if isinstance(value, list) else []


def _supported_instances(raw: str | None) -> tuple:
    """``[[arch, hv_type, vm_mode], ...]`` as lower-cased triples; shorter
    entries are padded with None, malformed ones dropped."""
    out = []
    for item in _json_list(raw):
        if not isinstance(item, list) or not 0 < len(item) <= 3:
            continue
        triple = [v.lower() if isinstance(v, str) and v else None
                  for v in item]
        out.append(tuple(triple + [None] * (3 - len(triple))))
    return tuple(out)


def _metrics(raw: str | None) -> dict[str, float]:
    """nova's monitor metrics, ``[{"name": ..., "value": ..., ...}, ...]``,
    as name -> value; entries without a name or a finite number are
    dropped."""
    out: dict[str, float] = {}
    for item in _json_list(raw):
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        value = item.get("value")
        if not isinstance(name, str) or not name or isinstance(value, bool):
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            out[name] = value
    return out


def _int(value) -> int:
    """A counter from ``stats`` (often a string); 0 if absent or bad."""
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
