"""Simulated compute nodes: register them in SQL and keep them heartbeating.

This is what a fleet of nova-compute agents does to the scheduler's tables,
minus the hypervisor: one service row (binary ``nova-compute``) and one
compute node per host, spread over availability-zone aggregates, with sizes
and allocation ratios drawn from a seeded generator so a fleet can be made
again identically.
"""
from __future__ import annotations

import dataclasses
import random
import uuid as uuidlib

import sqlalchemy as sa

from scheduler.db import clock

from scheduler.db import compute
from scheduler.db import models
from scheduler.progress import Start

#: (vcpus, memory_mb, local_gb) of the node sizes a fleet mixes.
NODE_SIZES = ((8, 16384, 200), (16, 65536, 500), (32, 131072, 1000),
              (64, 262144, 2000))
CPU_RATIOS = (16.0, 4.0, 1.0)
RAM_RATIOS = (1.0, 1.5)
ZONES = ("az1", "az2", "az3")
BATCH = 2000


@dataclasses.dataclass(frozen=True)
class Node:
    host: str
    vcpus: int
    memory_mb: int
    local_gb: int
    cpu_allocation_ratio: float
    ram_allocation_ratio: float
    zone: str
    host_ip: str


def make_nodes(count: int, seed: int = 0, first: int = 1) -> list[Node]:
    """``count`` nodes named ``compute-%05d`` from ``first`` on."""
    rng = random.Random(seed)
    nodes = []
    for i in range(first, first + count):
        vcpus, memory_mb, local_gb = rng.choice(NODE_SIZES)
        nodes.append(Node(
            host=f"compute-{i:05d}", vcpus=vcpus, memory_mb=memory_mb,
            local_gb=local_gb, cpu_allocation_ratio=rng.choice(CPU_RATIOS),
            ram_allocation_ratio=rng.choice(RAM_RATIOS),
            zone=ZONES[i % len(ZONES)],
            host_ip=f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"))
    return nodes


def register(engine: sa.Engine, nodes: list[Node],
             progress: Start | None = None) -> int:
    """Create the service, compute node and zone membership of every node
    not registered yet. Existing hosts are left as they are, so
    registering again (a restarted fleet) keeps their usage.
    :param progress: told the number of new nodes; the report it returns
        is called with 0, then after each batch with how many are
        registered.
    :returns: how many hosts were new.
    """
    services = models.services
    compute_nodes = models.compute_nodes
    with engine.begin() as conn:
        known = {row.host for row in conn.execute(
            sa.select(services.c.host).where(
                services.c.binary == compute.COMPUTE_BINARY,
                services.c.deleted == 0))}
        zone_ids = _zone_aggregates(conn)
        now = clock.db_time(conn)
    new = [n for n in nodes if n.host not in known]
    report = progress(len(new)) if progress else None
    if report:
        report(0)
    # One transaction per batch: on PostgreSQL the change-tracking trigger
    # updates one counter row per node, and thousands of updates of one row
    # in one transaction grow quadratically. A batch is all or nothing, and
    # registering again completes an interrupted run.
    for start in range(0, len(new), BATCH):
        batch = new[start:start + BATCH]
        with engine.begin() as conn:
            conn.execute(services.insert(), [
                {"uuid": str(uuidlib.uuid4()), "host": n.host,
                 "binary": compute.COMPUTE_BINARY,
                 "topic": compute.COMPUTE_TOPIC,
                 "report_count": 0, "disabled": False, "forced_down": False,
                 "last_seen_up": now, "created_at": now, "deleted": 0,
                 "version": 0} for n in batch])
            conn.execute(compute_nodes.insert(), [
                {"uuid": str(uuidlib.uuid4()), "host": n.host,
                 "hypervisor_hostname": n.host, "hypervisor_type": "QEMU",
                 "hypervisor_version": 8002000, "host_ip": n.host_ip,
                 "vcpus": n.vcpus, "memory_mb": n.memory_mb,
                 "local_gb": n.local_gb, "vcpus_used": 0,
                 "memory_mb_used": 0, "local_gb_used": 0,
                 "free_ram_mb": n.memory_mb, "free_disk_gb": n.local_gb,
                 "running_vms": 0, "current_workload": 0, "cpu_info": "{}",
                 "stats": "{}", "cpu_allocation_ratio": n.cpu_allocation_ratio,
                 "ram_allocation_ratio": n.ram_allocation_ratio,
                 "disk_allocation_ratio": 1.0, "generation": 0,
                 "created_at": now, "deleted": 0} for n in batch])
            conn.execute(models.aggregate_hosts.insert(), [
                {"host": n.host, "aggregate_id": zone_ids[n.zone],
                 "created_at": now, "deleted": 0} for n in batch])
        if report:
            report(start + len(batch))
    return len(new)


def _zone_aggregates(conn: sa.Connection) -> dict[str, int]:
    """The id of each zone's aggregate, creating the missing ones."""
    aggs = models.aggregates
    ids = {row.name: row.id for row in conn.execute(
        sa.select(aggs.c.id, aggs.c.name).where(aggs.c.name.in_(ZONES),
                                                aggs.c.deleted == 0))}
    for zone in ZONES:
        if zone not in ids:
            ids[zone] = conn.execute(aggs.insert().values(
                uuid=str(uuidlib.uuid4()), name=zone, deleted=0)
            ).inserted_primary_key[0]
            conn.execute(models.aggregate_metadata.insert().values(
                aggregate_id=ids[zone], key="availability_zone", value=zone,
                deleted=0))
    return ids


def heartbeat(engine: sa.Engine, hosts: list[str]) -> int:
    """One heartbeat for each of ``hosts`` (report_count + 1, last_seen_up
    = the database's now), as nova's servicegroup DB driver does.
    :returns: the number of services updated.
    """
    services = models.services
    count = 0
    with engine.begin() as conn:
        for start in range(0, len(hosts), BATCH):
            result = conn.execute(
                services.update()
                .where(services.c.host.in_(hosts[start:start + BATCH]),
                       services.c.binary == compute.COMPUTE_BINARY,
                       services.c.deleted == 0)
                .values(report_count=services.c.report_count + 1,
                        last_seen_up=clock.utcnow(),
                        updated_at=clock.utcnow()))
            count += result.rowcount
    return count
