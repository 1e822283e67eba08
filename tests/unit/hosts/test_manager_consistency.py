"""Property: after any sequence of external writes, an incremental refresh
gives exactly what a full read gives — states, columns and zone masks.

The writes are what compute agents, operators and other schedulers do to
the tables: inventory and usage, heartbeats, forced down, disable/enable,
aggregates and their zones and ratios, nodes added (new hosts and more nodes
of a known host), deleted (soft and hard), moved to another host or
renamed, and services deleted (soft and hard), created again and renamed.
Several writes may land
between two refreshes, in any mix — including a node added in the same
refresh as its host's liveness change.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import random
import uuid as uuidlib

import numpy as np
import pytest
import sqlalchemy as sa

from scheduler.admin import aggregates
from scheduler.admin import services
from scheduler import exception
from scheduler.sim import fleet
from scheduler.db import clock
from scheduler.db import compute
from scheduler.db import models
from scheduler.hosts import rows
from scheduler.hosts.table import LIMITS
from scheduler.hosts.table import NUMERIC
from tests.unit.conftest import fresh_host_manager
from tests.unit.fakes import node
from tests.unit.fakes import set_node
from tests.unit.fakes import set_service

OLD = datetime.datetime(2000, 1, 1)
ZONES = ("az1", "az2", "az9")
AGGREGATES = ("agg-a", "agg-b", "agg-c")


class World:
    """The database as the writers see it, and the random writes."""

    def __init__(self, engine, rng: random.Random):
        self.engine = engine
        self.rng = rng
        self.hosts = [f"h{i}" for i in range(4)]
        fleet.register(engine, [node(h, zone=rng.choice(fleet.ZONES))
                                for h in self.hosts])
        for name in AGGREGATES:
            aggregates.create_aggregate(engine, name)
        self.serial = len(self.hosts)

    def _host(self) -> str:
        return self.rng.choice(self.hosts)

    def _nodes(self, host: str | None = None) -> list[sa.Row]:
        n = models.compute_nodes
        query = sa.select(n.c.id, n.c.host).where(n.c.deleted == 0)
        if host is not None:
            query = query.where(n.c.host == host)
        with self.engine.connect() as conn:
            return conn.execute(query).all()

    def _update_node(self, **values) -> None:
        nodes = self._nodes()
        if not nodes:
            return
        n = models.compute_nodes
        with self.engine.begin() as conn:
            conn.execute(n.update().where(
                n.c.id == self.rng.choice(nodes).id).values(**values))

    # -- the writes ------------------------------------------------------

    def inventory(self) -> None:
        r = self.rng
        self._update_node(
            vcpus=r.choice([0, 4, 16]), memory_mb=r.choice([2048, 8192]),
            local_gb=r.choice([20, 100]),
            cpu_allocation_ratio=r.choice([None, 0.0, 1.0, 4.0]),
            ram_allocation_ratio=r.choice([None, 1.0, 1.5]),
            disk_allocation_ratio=r.choice([None, 0.0, 2.0]))

    def usage(self) -> None:
        r = self.rng
        self._update_node(vcpus_used=r.randint(0, 20),
                          memory_mb_used=r.randint(0, 9000),
                          local_gb_used=r.randint(0, 120),
                          running_vms=r.randint(0, 9),
                          generation=r.randint(0, 1000))

    def heartbeat(self) -> None:
        set_service(self.engine, self._host(),
                    last_seen_up=self.rng.choice([OLD, datetime.datetime
                                                  .utcnow()]),
                    updated_at=OLD)

    def forced_down(self) -> None:
        set_service(self.engine, self._host(),
                    forced_down=self.rng.random() < 0.5)

    def disable(self) -> None:
        host = self._host()
        disabled = self.rng.random() < 0.5
        try:
            services.set_service_disabled(
                self.engine, host, disabled,
                "maintenance" if disabled else None)
        except exception.NotFound:
            pass        # its service was deleted

    def _services(self) -> list[sa.Row]:
        s = models.services
        with self.engine.connect() as conn:
            return conn.execute(sa.select(s.c.id, s.c.host).where(
                s.c.deleted == 0)).all()

    def move_node(self) -> None:
        """A node reported by another host (or by one without a service)."""
        nodes = self._nodes()
        if nodes:
            n = models.compute_nodes
            with self.engine.begin() as conn:
                conn.execute(n.update().where(
                    n.c.id == self.rng.choice(nodes).id).values(
                    host=self.rng.choice(self.hosts + ["ghost"])))

    def rename_node(self) -> None:
        self._update_node(hypervisor_hostname=f"n{self.rng.randint(0, 99)}")

    def delete_service(self) -> None:
        services = self._services()
        if services:
            s = models.services
            gone = self.rng.choice(services)
            with self.engine.begin() as conn:
                if self.rng.random() < 0.7:
                    conn.execute(s.update().where(s.c.id == gone.id)
                                 .values(deleted=gone.id))
                else:
                    conn.execute(sa.delete(s).where(s.c.id == gone.id))

    def create_service(self) -> None:
        live = {r.host for r in self._services()}
        missing = [h for h in self.hosts + ["ghost"] if h not in live]
        if missing:
            new_service(self.engine, self.rng.choice(missing),
                        disabled=self.rng.random() < 0.3)

    def rename_service(self) -> None:
        services = self._services()
        live = {r.host for r in services}
        free = [h for h in self.hosts + ["ghost"] if h not in live]
        if services and free:
            s = models.services
            with self.engine.begin() as conn:
                conn.execute(s.update().where(
                    s.c.id == self.rng.choice(services).id).values(
                    host=self.rng.choice(free)))

    def aggregate_membership(self) -> None:
        name, host = self.rng.choice(AGGREGATES), self._host()
        try:
            if self.rng.random() < 0.6:
                aggregates.add_aggregate_host(self.engine, name, host)
            else:
                aggregates.remove_aggregate_host(self.engine, name, host)
        except (exception.InvalidRequest, exception.NotFound):
            pass   # already in / not in: nothing written

    def aggregate_metadata(self) -> None:
        r = self.rng
        key, value = r.choice([
            ("availability_zone", r.choice(ZONES + (None,))),
            ("ram_allocation_ratio", r.choice(["2.0", "0.5", None])),
            ("color", r.choice(["red", "blue", None]))])
        try:
            aggregates.set_aggregate_metadata(
                self.engine, r.choice(AGGREGATES), {key: value})
        except (exception.InvalidRequest, exception.NotFound):
            pass   # refused: nothing written

    def new_host(self) -> None:
        self.serial += 1
        host = f"h{self.serial}"
        fleet.register(self.engine, [node(host,
                                          zone=self.rng.choice(fleet.ZONES))])
        self.hosts.append(host)

    def new_node_of_a_known_host(self) -> None:
        host = self._host()
        self.serial += 1
        with self.engine.begin() as conn:
            conn.execute(models.compute_nodes.insert().values(
                uuid=str(uuidlib.uuid4()), host=host,
                hypervisor_hostname=f"{host}-node{self.serial}", vcpus=8,
                memory_mb=4096, local_gb=50, vcpus_used=0, memory_mb_used=0,
                local_gb_used=0, free_ram_mb=4096, free_disk_gb=50,
                running_vms=0, current_workload=0, cpu_info="{}",
                stats="{}", generation=0, deleted=0))

    def new_node_while_its_host_changes_liveness(self) -> None:
        """The suspected bug: one refresh sees both."""
        host = self._host()
        self.heartbeat_of(host)
        self.new_node_of(host)

    def heartbeat_of(self, host: str) -> None:
        s = models.services
        with self.engine.connect() as conn:
            old = conn.execute(sa.select(s.c.last_seen_up)
                               .where(s.c.host == host)).scalar()
        set_service(self.engine, host, updated_at=OLD,
                    last_seen_up=datetime.datetime.utcnow()
                    if old == OLD else OLD)

    def new_node_of(self, host: str) -> None:
        hosts, self.hosts = self.hosts, [host]
        try:
            self.new_node_of_a_known_host()
        finally:
            self.hosts = hosts

    def soft_delete_node(self) -> None:
        nodes = self._nodes()
        if len(nodes) > 1:
            n = models.compute_nodes
            victim = self.rng.choice(nodes).id
            with self.engine.begin() as conn:
                conn.execute(n.update().where(n.c.id == victim)
                             .values(deleted=victim))

    def hard_delete_node(self) -> None:
        nodes = self._nodes()
        if len(nodes) > 1:
            n = models.compute_nodes
            with self.engine.begin() as conn:
                conn.execute(sa.delete(n).where(
                    n.c.id == self.rng.choice(nodes).id))

    WRITES = ("inventory", "usage", "heartbeat", "forced_down", "disable",
              "aggregate_membership", "aggregate_metadata", "new_host",
              "new_node_of_a_known_host",
              "new_node_while_its_host_changes_liveness",
              "soft_delete_node", "hard_delete_node", "move_node",
              "rename_node", "delete_service", "create_service",
              "rename_service")
    #: Deletes make the next refresh a full read by design: rarer, so most
    #: steps test the incremental path.
    WEIGHTS = (4, 4, 4, 2, 2, 3, 3, 1, 1, 2, 0.5, 0.3, 1, 1, 0.7, 1, 0.5)

    def step(self) -> list[str]:
        done = self.rng.choices(self.WRITES, self.WEIGHTS,
                                k=self.rng.randint(1, 3))
        for name in done:
            getattr(self, name)()
        return done


def snapshot(table) -> dict:
    """Everything a planner can read from a table, keyed by node id (so
    two tables with hosts in another order compare equal)."""
    ids = [s.node_id for s in table.states]
    out = {"states": {s.node_id: s for s in table.states}}
    for name in NUMERIC + tuple(LIMITS) + ("service_up", "service_disabled",
                                           "host_names", "host_names_lower",
                                           "node_names", "no_zone"):
        out[name] = dict(zip(ids, getattr(table, name).tolist()))
    out["zones"] = {zone: {ids[i] for i in np.flatnonzero(mask)}
                    for zone, mask in table.zones.items()}
    assert table.positions == {node_id: i for i, node_id in enumerate(ids)}
    return out


@pytest.mark.parametrize("seed", range(30))
def test_incremental_refresh_equals_a_full_read(conf, engine, seed):
    rng = random.Random(seed)
    world = World(engine, rng)
    incremental = fresh_host_manager(conf, engine)
    incremental.refresh()
    history = []
    for _ in range(25):
        history.append(world.step())
        incremental.refresh()
        full = fresh_host_manager(conf, engine)
        full.refresh(full=True)
        got, want = snapshot(incremental.table()), snapshot(full.table())
        assert got["states"].keys() == want["states"].keys(), history
        for node_id, state in want["states"].items():
            assert got["states"][node_id] == state, (
                _differences(got["states"][node_id], state), history)
        for key in want:
            assert got[key] == want[key], (key, history)


def _differences(got, want) -> dict:
    """field -> (incremental, full) for the fields that differ."""
    return {f.name: (getattr(got, f.name), getattr(want, f.name))
            for f in dataclasses.fields(want)
            if getattr(got, f.name) != getattr(want, f.name)}


def new_service(engine, host: str, disabled: bool = False) -> None:
    with engine.begin() as conn:
        now = clock.db_time(conn)
        conn.execute(models.services.insert().values(
            uuid=str(uuidlib.uuid4()), host=host,
            binary=compute.COMPUTE_BINARY, topic="compute", report_count=0,
            disabled=disabled, forced_down=False, last_seen_up=now,
            created_at=now, deleted=0, version=0))


# -- the write sequences the random walk found, by name --------------------

def assert_as_a_full_read(conf, engine, incremental) -> None:
    incremental.refresh()
    full = fresh_host_manager(conf, engine)
    full.refresh(full=True)
    got, want = snapshot(incremental.cached_table()), snapshot(full.table())
    assert got["states"].keys() == want["states"].keys()
    for node_id, state in want["states"].items():
        assert got["states"][node_id] == state, _differences(
            got["states"][node_id], state)
    for key in want:
        assert got[key] == want[key], key


def refreshed(conf, engine, *hosts, zones=None):
    fleet.register(engine, [node(h, zone=z) for h, z in
                            zip(hosts, zones or ["az1"] * len(hosts))])
    incremental = fresh_host_manager(conf, engine)
    incremental.refresh()
    return incremental


def _move_nodes(engine, of: str, **values) -> None:
    """Change the node rows of host ``of``."""
    n = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(n.update().where(n.c.host == of).values(**values))


def _soft_delete_service(engine, host: str) -> None:
    s = models.services
    with engine.begin() as conn:
        conn.execute(s.update().where(s.c.host == host, s.c.deleted == 0)
                     .values(deleted=s.c.id))


def test_a_node_moved_to_another_host_takes_its_name_and_zone(conf, engine):
    incremental = refreshed(conf, engine, "a", "b", zones=["az1", "az2"])
    _move_nodes(engine, "a", host="b")
    assert_as_a_full_read(conf, engine, incremental)
    # And the host index follows: disabling b now reaches the moved node.
    services.set_service_disabled(engine, "b", True, "maintenance")
    assert_as_a_full_read(conf, engine, incremental)


def test_a_renamed_hypervisor_hostname_is_the_nodes_new_name(conf, engine):
    incremental = refreshed(conf, engine, "a")
    _move_nodes(engine, "a", hypervisor_hostname="a.example")
    assert_as_a_full_read(conf, engine, incremental)


def test_a_node_moved_to_a_host_without_a_service_leaves(conf, engine):
    incremental = refreshed(conf, engine, "a")
    _move_nodes(engine, "a", host="nowhere")
    assert_as_a_full_read(conf, engine, incremental)


@pytest.mark.parametrize("between", [True, False])
def test_a_service_deleted_and_created_again_brings_its_nodes_back(
        conf, engine, between):
    incremental = refreshed(conf, engine, "a", "b")
    _soft_delete_service(engine, "a")
    if between:
        assert_as_a_full_read(conf, engine, incremental)
    new_service(engine, "a")
    assert_as_a_full_read(conf, engine, incremental)


def test_a_hard_deleted_service_takes_its_nodes_out(conf, engine):
    incremental = refreshed(conf, engine, "a", "b")
    s = models.services
    with engine.begin() as conn:
        conn.execute(sa.delete(s).where(s.c.host == "a"))
    assert_as_a_full_read(conf, engine, incremental)


def test_a_renamed_service_no_longer_serves_its_old_hosts_nodes(conf,
                                                                engine):
    incremental = refreshed(conf, engine, "a", "b")
    s = models.services
    with engine.begin() as conn:
        conn.execute(s.update().where(s.c.host == "a").values(host="c"))
    assert_as_a_full_read(conf, engine, incremental)


def test_a_full_read_that_fails_half_way_is_read_again(conf, engine):
    incremental = refreshed(conf, engine, "a", "b")
    set_node(engine, "a", vcpus_used=3)
    # A value the state cannot be built from, as a bug might leave.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rows, "host_state", _broken)
        with pytest.raises(RuntimeError):
            incremental.refresh(full=True)
    assert_as_a_full_read(conf, engine, incremental)


def _broken(*args, **kwargs):
    raise RuntimeError("a bug building a host state")


def test_a_malformed_num_instances_in_stats_is_not_a_failed_read(conf,
                                                                  engine):
    incremental = refreshed(conf, engine, "a")
    set_node(engine, "a", stats=json.dumps({"num_instances": "many",
                                            "io_workload": [1]}))
    incremental.refresh(full=True)
    [state] = incremental.cached_table().states
    assert (state.num_instances, state.num_io_ops) == (0, 0)


def test_forget_of_a_node_that_moved_meanwhile(conf, engine):
    incremental = refreshed(conf, engine, "a", "b")
    [moved] = [s.node_id for s in incremental.cached_table().states
               if s.host == "a"]
    _move_nodes(engine, "a", host="b")
    incremental.forget([moved])        # a failed claim on it
    assert_as_a_full_read(conf, engine, incremental)
