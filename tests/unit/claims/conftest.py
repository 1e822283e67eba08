"""Claims against a real SQLite database file: two nodes, and the helpers
the claim tests share (also imported by ``tests/unit/db``'s allocation
queries, which need claims to read)."""
from __future__ import annotations

import uuid as uuidlib

import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.hosts.planned import Claim
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import node
from tests.unit.fakes import node_row

C1 = "aaaaaaaa-0000-4000-8000-000000000001"
C2 = "aaaaaaaa-0000-4000-8000-000000000002"
C3 = "aaaaaaaa-0000-4000-8000-000000000003"
C4 = "aaaaaaaa-0000-4000-8000-000000000004"
C5 = "aaaaaaaa-0000-4000-8000-000000000005"
#: Server groups.
G = "bbbbbbbb-0000-4000-8000-000000000001"
G2 = "bbbbbbbb-0000-4000-8000-000000000002"

USAGE = ("vcpus_used", "memory_mb_used", "local_gb_used", "free_ram_mb",
         "free_disk_gb", "running_vms", "generation")


def two_nodes(register, engine):
    """Nodes h1 and h2 (8 vCPUs, 8 GiB, 100 GB each): host -> row."""
    register(node("h1", vcpus=8, memory_mb=8192, local_gb=100),
             node("h2", vcpus=8, memory_mb=8192, local_gb=100))
    return {h: node_row(engine, h) for h in ("h1", "h2")}


@pytest.fixture
def nodes(register, engine):
    return two_nodes(register, engine)


def claim_on(row, consumer, vcpus=2, memory_mb=1024, disk_gb=10, **kw):
    """A claim of ``consumer`` on the node ``row`` at the generation it
    was read with."""
    return Claim(consumer_uuid=consumer, node_id=row.id, host=row.host,
                 generation=row.generation, vcpus=vcpus,
                 memory_mb=memory_mb, disk_gb=disk_gb, **kw)


def usage_of(engine, host):
    """The usage columns (:data:`USAGE`) of the live node ``host``."""
    n = models.compute_nodes
    with engine.connect() as conn:
        row = conn.execute(sa.select(n).where(
            n.c.hypervisor_hostname == host, n.c.deleted == 0)).one()
    return {k: getattr(row, k) for k in USAGE}


def node_now(engine, nodename):
    """The node named ``nodename`` as it is now."""
    n = models.compute_nodes
    with engine.connect() as conn:
        return conn.execute(sa.select(n).where(
            n.c.hypervisor_hostname == nodename, n.c.deleted == 0)).one()


def member(engine, nodename, consumer, group=G, **kw):
    """A claim of a group member on the node ``nodename`` as it is now."""
    return claim_on(node_now(engine, nodename), consumer, group_uuid=group, **kw)


def consumers(engine):
    """The consumers holding a claim, sorted."""
    return sorted(a.consumer_uuid for a in allocation_rows(engine))


def add_node(engine, host, nodename, vcpus=8, memory_mb=8192,
              local_gb=100):
    """A second hypervisor node on an existing host (nova: one service,
    many nodes)."""
    n = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(n.insert().values(
            uuid=str(uuidlib.uuid4()), host=host,
            hypervisor_hostname=nodename, vcpus=vcpus, memory_mb=memory_mb,
            local_gb=local_gb, vcpus_used=0, memory_mb_used=0,
            local_gb_used=0, free_ram_mb=memory_mb, free_disk_gb=local_gb,
            running_vms=0, cpu_allocation_ratio=1.0,
            ram_allocation_ratio=1.0, disk_allocation_ratio=1.0,
            generation=0, deleted=0))
    with engine.connect() as conn:
        return conn.execute(sa.select(n).where(
            n.c.hypervisor_hostname == nodename)).one()
