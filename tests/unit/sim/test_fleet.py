"""Simulated fleet: seeded nodes, registration, heartbeats."""
from __future__ import annotations

import sqlalchemy as sa

from scheduler.sim import fleet
from scheduler.db import models
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node


def test_make_nodes_is_reproducible():
    assert fleet.make_nodes(20, seed=3) == fleet.make_nodes(20, seed=3)
    assert fleet.make_nodes(20, seed=3) != fleet.make_nodes(20, seed=4)


def test_make_nodes_shape():
    nodes = fleet.make_nodes(4, seed=1, first=10)
    assert [n.host for n in nodes] == ["compute-00010", "compute-00011",
                                       "compute-00012", "compute-00013"]
    for n in nodes:
        assert (n.vcpus, n.memory_mb, n.local_gb) in fleet.NODE_SIZES
        assert n.zone in fleet.ZONES
    assert len({n.host_ip for n in nodes}) == 4


def test_register_creates_service_node_and_zone(engine):
    nodes = fleet.make_nodes(6, seed=0)
    assert fleet.register(engine, nodes) == 6
    with engine.connect() as conn:
        services = conn.execute(sa.select(models.services)).all()
        zones = conn.execute(
            sa.select(models.aggregate_hosts.c.host,
                      models.aggregate_metadata.c.value)
            .join(models.aggregate_metadata,
                  models.aggregate_metadata.c.aggregate_id
                  == models.aggregate_hosts.c.aggregate_id)).all()
    assert sorted(s.host for s in services) == [n.host for n in nodes]
    assert all(s.binary == "nova-compute" and s.last_seen_up is not None
               for s in services)
    assert dict(zones) == {n.host: n.zone for n in nodes}
    row = node_row(engine, nodes[0].host)
    assert (row.vcpus, row.memory_mb, row.local_gb, row.free_ram_mb,
            row.generation) == (nodes[0].vcpus, nodes[0].memory_mb,
                                nodes[0].local_gb, nodes[0].memory_mb, 0)


def test_register_again_keeps_existing_hosts(engine):
    nodes = fleet.make_nodes(3, seed=0)
    fleet.register(engine, nodes)
    set_node(engine, nodes[0].host, memory_mb_used=100)
    more = fleet.make_nodes(2, seed=9, first=4)
    assert fleet.register(engine, nodes + more) == 2
    assert node_row(engine, nodes[0].host).memory_mb_used == 100
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(
            models.compute_nodes)).scalar() == 5
        # one aggregate per zone, not one per registration
        assert conn.execute(sa.select(sa.func.count()).select_from(
            models.aggregates)).scalar() == len(fleet.ZONES)


def test_heartbeat_counts_services(engine):
    nodes = fleet.make_nodes(3, seed=0)
    fleet.register(engine, nodes)
    assert fleet.heartbeat(engine, [nodes[0].host, "unknown"]) == 1
    with engine.connect() as conn:
        counts = dict(conn.execute(sa.select(models.services.c.host,
                                             models.services.c.report_count)
                                   ).all())
    assert counts == {nodes[0].host: 1, nodes[1].host: 0, nodes[2].host: 0}
