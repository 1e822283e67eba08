"""Builders shared by the unit tests: host states, request specs and
fleet nodes with chosen (not random) sizes."""
from __future__ import annotations

import copy
from typing import Any
import uuid as uuidlib

import sqlalchemy as sa

from scheduler.sim import fleet
from scheduler.db import models
from scheduler.hosts.state import Aggregate
from scheduler.hosts.state import HostState
from scheduler.request.spec import RequestSpec

FLAVOR = {"name": "m1.small", "flavorid": "2", "memory_mb": 2048,
          "vcpus": 1, "root_gb": 20, "ephemeral_gb": 0, "swap": 0,
          "extra_specs": {}}


def make_host(host: str = "host1", nodename: str | None = None,
              node_id: int = 1, **kw: Any) -> HostState:
    """A HostState with roomy defaults and ratios of 1.0."""
    fields: dict[str, Any] = {
        "node_id": node_id, "uuid": None, "host": host,
        "nodename": nodename if nodename is not None else host,
        "generation": 0, "vcpus_total": 8, "vcpus_used": 0,
        "memory_mb_total": 8192, "memory_mb_used": 0,
        "disk_gb_total": 100, "disk_gb_used": 0,
        "cpu_allocation_ratio": 1.0, "ram_allocation_ratio": 1.0,
        "disk_allocation_ratio": 1.0, "service_up": True,
        "service_disabled": False}
    fields.update(kw)
    return HostState(**fields)


def zone_aggregate(zone: str, agg_id: int = 1) -> Aggregate:
    return Aggregate(agg_id, f"agg-{zone}", {"availability_zone": zone})


def spec_dict(**overrides: Any) -> dict[str, Any]:
    """A valid ``spec`` primitive; ``flavor`` overrides merge into the
    default flavor."""
    spec: dict[str, Any] = {"flavor": copy.deepcopy(FLAVOR),
                            "project_id": "p1", "user_id": "u1"}
    flavor = overrides.pop("flavor", None)
    if flavor:
        spec["flavor"].update(flavor)
    spec.update(overrides)
    return spec


def nested(levels: int, container: type = dict) -> Any:
    """A value ``levels`` containers deep (``{"k": {"k": ... "x"}}``, or
    lists), built without recursion: hostile input of issue 46."""
    value: Any = "x"
    for _ in range(levels):
        value = {"k": value} if container is dict else [value]
    return value


def make_spec(**overrides: Any) -> RequestSpec:
    return RequestSpec.from_primitives(spec_dict(**overrides))


def node(host: str, vcpus: int = 8, memory_mb: int = 8192,
         local_gb: int = 100, cpu_ratio: float = 1.0,
         ram_ratio: float = 1.0, zone: str = "az1") -> fleet.Node:
    return fleet.Node(host=host, vcpus=vcpus, memory_mb=memory_mb,
                      local_gb=local_gb, cpu_allocation_ratio=cpu_ratio,
                      ram_allocation_ratio=ram_ratio, zone=zone,
                      host_ip="192.0.2.1")


# --- reading the database back -----------------------------------------

def node_row(engine: sa.Engine, host: str) -> sa.Row:
    n = models.compute_nodes
    with engine.connect() as conn:
        return conn.execute(sa.select(n).where(n.c.host == host,
                                               n.c.deleted == 0)).one()


def recreate_node(engine: sa.Engine, host: str) -> sa.Row:
    """What a compute agent does when its node's record is gone (deleted
    with its service, a hypervisor reinstalled): the old row soft-deleted,
    a new one for the same host and name, with a new uuid and no usage.
    :returns: the new row."""
    n = models.compute_nodes
    old = node_row(engine, host)
    with engine.begin() as conn:
        conn.execute(n.update().where(n.c.id == old.id)
                     .values(deleted=old.id))
        conn.execute(n.insert().values(
            {**{c.name: getattr(old, c.name) for c in n.c
                if c.name != "id"},
             "uuid": str(uuidlib.uuid4()), "vcpus_used": 0,
             "memory_mb_used": 0, "local_gb_used": 0, "running_vms": 0,
             "free_ram_mb": old.memory_mb, "free_disk_gb": old.local_gb,
             "generation": 0, "deleted": 0}))
    return node_row(engine, host)


def allocation_rows(engine: sa.Engine) -> list[sa.Row]:
    a = models.allocations
    with engine.connect() as conn:
        return conn.execute(sa.select(a).order_by(a.c.id)).all()


def bump_generation(engine: sa.Engine, host: str) -> None:
    """What a compute agent's write (or another scheduler) does."""
    n = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(n.update().where(n.c.host == host)
                     .values(generation=n.c.generation + 1))


def set_service(engine: sa.Engine, host: str, **values: Any) -> None:
    s = models.services
    with engine.begin() as conn:
        conn.execute(s.update().where(s.c.host == host).values(**values))


def set_node(engine: sa.Engine, host: str, **values: Any) -> None:
    n = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(n.update().where(n.c.host == host).values(**values))
