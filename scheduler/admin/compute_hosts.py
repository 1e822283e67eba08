"""Operator views of compute hosts and their nodes: every node's totals,
usage and ratios; every compute host with its state, nodes and zones; one
host in detail, with the capacity the scheduler holds each node to and
who uses it.
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from scheduler.admin import services
from scheduler.admin.aggregates import live_aggregates
from scheduler.admin.aggregates import zones_by_host
from scheduler.admin import validation
from scheduler.hosts import capacity
from scheduler.db import allocations
from scheduler.hosts import liveness
from scheduler.db import clock
from scheduler.db import compute
from scheduler.hosts.rows import aggregates_by_host
from scheduler.db import models


def list_nodes(engine: sa.Engine) -> list[dict]:
    """Every live compute node with its totals, usage and ratios."""
    n = models.compute_nodes
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(n.c.id, n.c.host, n.c.hypervisor_hostname, n.c.vcpus,
                      n.c.vcpus_used, n.c.memory_mb, n.c.memory_mb_used,
                      n.c.local_gb, n.c.local_gb_used,
                      n.c.cpu_allocation_ratio, n.c.ram_allocation_ratio,
                      n.c.disk_allocation_ratio, n.c.generation)
            .where(n.c.deleted == 0).order_by(n.c.host,
                                              n.c.hypervisor_hostname))
        return [dict(row._mapping) for row in rows]


def list_compute_hosts(engine: sa.Engine, service_down_time: float,
                       default_zone: str) -> list[dict]:
    """Every host with a live compute service (binary ``nova-compute``),
    sorted by host: ``host``, ``status`` (``enabled``/``disabled``),
    ``disabled_reason``, ``state`` (see
    :func:`~scheduler.admin.services.service_state`; ages by the
    database's clock), ``nodes`` (how many live compute nodes) and
    ``zones`` (the ``availability_zone`` metadata of its live aggregates,
    sorted, or ``[default_zone]`` if none has one).
    """
    s, n = models.services, models.compute_nodes
    counts = (sa.select(n.c.host, sa.func.count().label("nodes"))
              .where(n.c.deleted == 0).group_by(n.c.host).subquery())
    query = (sa.select(s.c.host, s.c.disabled, s.c.disabled_reason,
                       s.c.forced_down, s.c.last_seen_up, s.c.updated_at,
                       s.c.created_at,
                       sa.func.coalesce(counts.c.nodes, 0).label("nodes"))
             .select_from(s.outerjoin(counts, counts.c.host == s.c.host))
             .where(s.c.binary == compute.COMPUTE_BINARY, s.c.deleted == 0)
             .order_by(s.c.host))
    with engine.connect() as conn:
        now = clock.db_time(conn)
        rows = conn.execute(query).all()
        zones = zones_by_host(conn)
    return [{"host": row.host,
             "status": "disabled" if row.disabled else "enabled",
             "disabled_reason": row.disabled_reason,
             "state": services.service_state(
                 row.forced_down, liveness.heartbeat_age(row, now),
                 service_down_time),
             "nodes": row.nodes,
             "zones": zones.get(row.host, [default_zone])}
            for row in rows]


def node_resources(row: sa.Row, default_ratios: capacity.Ratios,
                   aggregates: Sequence, enabled_filters: Sequence[str]
                   ) -> list[dict]:
    """A compute_nodes ``row``'s ``resource``, ``total``, ``ratio``,
    ``capacity`` (total × ratio) and ``used``, for vcpus, memory_mb and
    disk_gb: the ratio a scheduler with ``enabled_filters`` holds the node
    to (:func:`scheduler.hosts.capacity.ratio_in_force`, as the filters and the
    claim: an aggregate's under the Aggregate* filters), from the node's
    own, else ``default_ratios``'."""
    out = []
    for resource in capacity.RESOURCES:
        total = getattr(row, resource.node_total)
        ratio = capacity.ratio_in_force(
            resource, capacity.ratio(getattr(row, resource.ratio),
                                     default_ratios.of(resource)),
            aggregates, enabled_filters)
        out.append({"resource": resource.flavor, "total": total,
                    "ratio": ratio,
                    "capacity": capacity.limit(total, ratio),
                    "used": getattr(row, resource.node_used)})
    return out


def describe_host(engine: sa.Engine, host: str, *,
                  service_down_time: float, default_zone: str,
                  default_ratios: capacity.Ratios,
                  enabled_filters: Sequence[str] = ()) -> dict:
    """One compute host in detail.

    :param default_ratios: for a node that has none of its own.
    :param enabled_filters: the scheduler's filters: ``ratio`` is the one
        they hold the node to (:func:`node_resources`, as the audit).
    :returns: the fields of :func:`list_compute_hosts` (but ``nodes`` is a
        list), and ``aggregates``: ``[{"name", "metadata"}]`` sorted by
        name. Each node: ``node`` (hypervisor hostname), ``uuid``,
        ``resources``: for ``vcpus``, ``memory_mb`` and ``disk_gb`` a dict
        of ``resource``, ``total``, ``ratio``, ``capacity`` (total × ratio)
        and ``used`` (the node's usage now); and ``projects``: the node's
        rows in ``allocations`` summed per ``project_id`` (``instances``,
        ``moving`` (how many of them are one side of a move in flight:
        both sides count), ``vcpus``, ``memory_mb``, ``disk_gb``), sorted
        by project, claims without a project last (``project_id`` None).
    :raises NotFound: ``no compute host 'X'`` (no live compute service).
    :raises InvalidRequest: ``host`` is not text
        (:func:`~scheduler.admin.validation.check_name`).
    """
    validation.check_name("host", host)
    n, a = models.compute_nodes, allocations.usage_sides()
    with engine.connect() as conn:
        now = clock.db_time(conn)
        service = services.compute_service(conn, host)
        # The stored name: MariaDB matched ``host`` case-insensitively.
        host = service.host
        zones = zones_by_host(conn, host).get(host, [default_zone])
        nodes = conn.execute(
            sa.select(n).where(n.c.host == host, n.c.deleted == 0)
            .order_by(n.c.hypervisor_hostname, n.c.id)).all()
        usage: dict[int, list[dict]] = {}
        if nodes:
            for row in conn.execute(
                    sa.select(a.c.compute_node_id, a.c.project_id,
                              sa.func.count().label("instances"),
                              sa.func.count(a.c.moving).label("moving"),
                              sa.func.sum(a.c.vcpus).label("vcpus"),
                              sa.func.sum(a.c.memory_mb).label("memory_mb"),
                              sa.func.sum(a.c.disk_gb).label("disk_gb"))
                    .where(a.c.compute_node_id.in_([r.id for r in nodes]))
                    .group_by(a.c.compute_node_id, a.c.project_id)):
                usage.setdefault(row.compute_node_id, []).append(
                    {"project_id": row.project_id,
                     "instances": row.instances, "moving": row.moving,
                     "vcpus": int(row.vcpus),
                     "memory_mb": int(row.memory_mb),
                     "disk_gb": int(row.disk_gb)})
        aggregates = [
            {"name": agg["name"], "metadata": agg["metadata"]}
            for agg in live_aggregates(conn, host=host)]
        host_aggregates = aggregates_by_host(
            compute.aggregates(conn)).get(host, ())
    out_nodes = []
    for row in nodes:
        resources = node_resources(row, default_ratios, host_aggregates,
                                   enabled_filters)
        projects = sorted(usage.get(row.id, []),
                          key=lambda p: (p["project_id"] is None,
                                         p["project_id"] or ""))
        out_nodes.append({"node": row.hypervisor_hostname, "uuid": row.uuid,
                          "resources": resources, "projects": projects})
    return {"host": service.host,
            "status": "disabled" if service.disabled else "enabled",
            "disabled_reason": service.disabled_reason,
            "state": services.service_state(
                service.forced_down, liveness.heartbeat_age(service, now),
                service_down_time),
            "zones": zones, "nodes": out_nodes, "aggregates": aggregates}
