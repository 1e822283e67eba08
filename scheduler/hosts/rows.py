"""Turning database rows into HostStates and their aggregates.

JSON columns are parsed here, once per row read; bad JSON reads as empty,
so one broken agent cannot break scheduling for everyone.
"""
from __future__ import annotations

from collections.abc import Mapping
import json
import math
import sys
import types

import sqlalchemy as sa

from scheduler.db.compute import Aggregates
from scheduler.db.compute import NodeRow
from scheduler.hosts import capacity
from scheduler.hosts.state import Aggregate
from scheduler.hosts.state import HostState


def host_state(row: NodeRow, service: sa.Row,
               aggregates: tuple[Aggregate, ...], up: bool,
               default_ratios: capacity.Ratios) -> HostState:
    """The HostState of a compute node row, its service row, the host's
    aggregates and whether the service is up; a node without a ratio of
    its own gets ``default_ratios`` (``[filter_scheduler]
    *_allocation_ratio``)."""
    stats = _stats(row.stats)
    return HostState(
        node_id=row.id, uuid=row.uuid, host=row.host,
        # The same string object when equal (usual): 100,000 fewer strings.
        nodename=row.host if row.hypervisor_hostname in (None, row.host)
        else row.hypervisor_hostname,
        generation=row.generation,
        vcpus_total=row.vcpus, vcpus_used=row.vcpus_used,
        memory_mb_total=row.memory_mb, memory_mb_used=row.memory_mb_used,
        disk_gb_total=row.local_gb, disk_gb_used=row.local_gb_used,
        cpu_allocation_ratio=capacity.ratio(row.cpu_allocation_ratio,
                                            default_ratios.cpu),
        ram_allocation_ratio=capacity.ratio(row.ram_allocation_ratio,
                                            default_ratios.ram),
        disk_allocation_ratio=capacity.ratio(row.disk_allocation_ratio,
                                             default_ratios.disk),
        service_up=up and not service.forced_down,
        service_disabled=bool(service.disabled),
        disabled_reason=service.disabled_reason,
        aggregates=aggregates,
        # running_vms: what the agent reports (nova's compute writes its
        # num_instances stat there too) plus this service's claims since;
        # the stat alone would forget a claimed instance at the next
        # refresh, where nova's scheduler still counts it.
        num_instances=_int(stats.get("num_instances")
                           if row.running_vms is None else row.running_vms),
        num_io_ops=_int(stats.get("io_workload", row.current_workload)),
        host_ip=row.host_ip,
        hypervisor_type=sys.intern(row.hypervisor_type)
        if row.hypervisor_type else row.hypervisor_type,
        hypervisor_version=row.hypervisor_version or 0, stats=stats,
        supported_instances=_supported_instances(row.supported_instances),
        metrics=_metrics(row.metrics), cpu_info=_stats(row.cpu_info),
        failed_builds=_int(stats.get("failed_builds")))



def aggregates_by_host(aggregates: Aggregates
                       ) -> dict[str, tuple[Aggregate, ...]]:
    """host -> its live aggregates. One Aggregate object per aggregate and
    one tuple per distinct membership, shared by every host that has it:
    at 100,000 hosts in a few zones, a tuple per host is tens of MB."""
    objects = {i: Aggregate(i, row.name, row.metadata, row.uuid)
               for i, row in aggregates.rows.items()}
    shared: dict[tuple[int, ...], tuple[Aggregate, ...]] = {}
    out = {}
    for host, agg_ids in aggregates.hosts.items():
        key = tuple(agg_ids)
        if key not in shared:
            shared[key] = tuple(objects[i] for i in key)
        out[host] = shared[key]
    return out

#: What an empty JSON column reads as: one shared, read-only mapping, not a
#: new dict per host (100,000 empty dicts are megabytes for nothing).
EMPTY: Mapping = types.MappingProxyType({})


def _stats(raw: str | None) -> Mapping:
    """A JSON object column (``stats``, ``cpu_info``); anything else is
    empty."""
    if not raw or raw == "{}":
        return EMPTY
    try:
        value = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return EMPTY
    return value if isinstance(value, dict) else EMPTY


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


#: nova's CPU percent metrics: its compute stores them divided by 100 (a
#: fraction of one) and its scheduler reads them back in percent.
PERCENT_METRICS = frozenset((
    "cpu.percent", "cpu.user.percent", "cpu.kernel.percent",
    "cpu.idle.percent", "cpu.iowait.percent"))


def _metrics(raw: str | None) -> Mapping[str, float]:
    """nova's monitor metrics, ``[{"name": ..., "value": ..., ...}, ...]``,
    as name -> value, the value as nova's scheduler holds it: the CPU
    percent metrics (:data:`PERCENT_METRICS`), which the column holds as a
    fraction (0.9), in percent (90), as nova's
    ``MonitorMetricList.from_json`` reads them (so the MetricsWeigher
    weighs what nova's does). Entries without a name or a finite number
    are dropped."""
    out: dict[str, float] = {}
    if not raw or raw == "[]":
        return EMPTY
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
        if name in PERCENT_METRICS:
            value *= 100
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
