"""HostManager: host states from a real SQLite database."""
from __future__ import annotations

import dataclasses
import datetime
import json
import threading

import sqlalchemy as sa

from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from scheduler.sim import fleet
from scheduler.db import clock
from scheduler.db import models
from tests.unit.conftest import fresh_host_manager
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node
from tests.unit.fakes import set_service


def _db_now(engine) -> datetime.datetime:
    with engine.connect() as conn:
        return clock.db_time(conn)


def _by_host(states):
    return {s.host: s for s in states}


def test_states_mirror_the_fleet(register, engine, host_manager):
    register(node("h1", vcpus=16, memory_mb=65536, local_gb=500,
                  cpu_ratio=4.0, ram_ratio=1.5, zone="az2"))
    row = node_row(engine, "h1")
    [state] = host_manager.host_states()
    assert state.node_id == row.id and state.uuid == row.uuid
    assert state.key == ("h1", "h1")
    assert (state.vcpus_total, state.memory_mb_total,
            state.disk_gb_total) == (16, 65536, 500)
    assert (state.vcpus_used, state.memory_mb_used,
            state.disk_gb_used) == (0, 0, 0)
    assert (state.cpu_allocation_ratio, state.ram_allocation_ratio,
            state.disk_allocation_ratio) == (4.0, 1.5, 1.0)
    assert state.generation == 0
    assert state.service_up is True and state.service_disabled is False
    assert state.availability_zones() == {"az2"}
    assert state.host_ip == "192.0.2.1"
    assert state.hypervisor_type == "QEMU"


def test_random_fleet_is_all_up(random_fleet, host_manager):
    states = host_manager.host_states()
    assert sorted(s.host for s in states) == sorted(
        n.host for n in random_fleet)
    assert all(s.service_up and not s.service_disabled for s in states)
    for n in random_fleet:
        s = _by_host(states)[n.host]
        assert (s.vcpus_total, s.memory_mb_total, s.disk_gb_total) == (
            n.vcpus, n.memory_mb, n.local_gb)
        assert s.availability_zones() == {n.zone}


def test_old_heartbeat_is_down(register, engine, conf, host_manager):
    register(node("fresh"), node("stale"), node("edge"))
    now = _db_now(engine)
    down_time = conf.scheduler.service_down_time
    set_service(engine, "stale",
                last_seen_up=now - datetime.timedelta(seconds=down_time + 5))
    set_service(engine, "edge",
                last_seen_up=now - datetime.timedelta(seconds=down_time - 5))
    states = _by_host(host_manager.host_states())
    assert states["fresh"].service_up is True
    assert states["edge"].service_up is True
    assert states["stale"].service_up is False


def test_service_down_time_option_decides(register, engine, conf,
                                          host_manager):
    register(node("h1"))
    set_service(engine, "h1", last_seen_up=_db_now(engine)
                - datetime.timedelta(seconds=120))
    assert host_manager.host_states()[0].service_up is False
    conf.set_override("service_down_time", 300, group="scheduler")
    assert host_manager.host_states()[0].service_up is True


def test_heartbeat_falls_back_to_updated_at_then_created_at(register, engine,
                                                            host_manager):
    register(node("upd"), node("created"), node("never"))
    now = _db_now(engine)
    set_service(engine, "upd", last_seen_up=None, updated_at=now)
    set_service(engine, "created", last_seen_up=None, updated_at=None,
                created_at=now)
    set_service(engine, "never", last_seen_up=None, updated_at=None,
                created_at=None)
    states = _by_host(host_manager.host_states())
    assert states["upd"].service_up is True
    assert states["created"].service_up is True
    assert states["never"].service_up is False


def test_heartbeat_brings_a_host_back(register, engine, host_manager):
    register(node("h1"))
    set_service(engine, "h1", last_seen_up=_db_now(engine)
                - datetime.timedelta(hours=1))
    assert host_manager.host_states()[0].service_up is False
    assert fleet.heartbeat(engine, ["h1"]) == 1
    assert host_manager.host_states()[0].service_up is True


def test_forced_down_is_down_despite_a_fresh_heartbeat(register, engine,
                                                       host_manager):
    register(node("h1"), node("h2"))
    set_service(engine, "h1", forced_down=True)
    states = _by_host(host_manager.host_states())
    assert states["h1"].service_up is False
    assert states["h2"].service_up is True


def test_disabled_service_is_kept_with_its_reason(register, engine,
                                                  host_manager):
    register(node("h1"), node("h2"))
    set_service(engine, "h1", disabled=True, disabled_reason="maintenance")
    states = _by_host(host_manager.host_states())
    assert set(states) == {"h1", "h2"}
    assert states["h1"].service_disabled is True
    assert states["h1"].disabled_reason == "maintenance"
    assert states["h1"].service_up is True
    assert states["h2"].service_disabled is False


def test_node_without_service_is_skipped(register, engine, host_manager):
    register(node("h1"), node("orphan"), node("other-binary"))
    s = models.services
    with engine.begin() as conn:
        row = conn.execute(sa.select(s.c.id).where(
            s.c.host == "orphan")).one()
    set_service(engine, "orphan", deleted=row.id)
    set_service(engine, "other-binary", binary="nova-conductor")
    assert [s.host for s in host_manager.host_states()] == ["h1"]


def test_one_service_many_nodes(register, engine, host_manager):
    register(node("ironic"))
    n = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(n.update().where(n.c.host == "ironic")
                     .values(hypervisor_hostname="node-a"))
        conn.execute(n.insert().values(
            uuid="bbbbbbbb-0000-4000-8000-000000000001", host="ironic",
            hypervisor_hostname="node-b", hypervisor_type="ironic",
            hypervisor_version=1, vcpus=4, memory_mb=4096, local_gb=10,
            cpu_info="{}", deleted=0, generation=0))
    states = host_manager.host_states()
    assert sorted(s.key for s in states) == [("ironic", "node-a"),
                                             ("ironic", "node-b")]


def test_deleted_node_disappears_on_the_next_refresh(register, engine,
                                                     host_manager):
    register(node("h1"), node("h2"))
    assert len(host_manager.host_states()) == 2
    set_node(engine, "h2", deleted=node_row(engine, "h2").id)
    assert [s.host for s in host_manager.host_states()] == ["h1"]
    assert [s.host for s in list(host_manager.cached_table().states)] == ["h1"]


def test_zero_or_null_ratio_falls_back_to_the_options(register, engine,
                                                      conf):
    register(node("zero"), node("null"))
    set_node(engine, "zero", cpu_allocation_ratio=0.0,
             ram_allocation_ratio=0.0, disk_allocation_ratio=0.0)
    set_node(engine, "null", cpu_allocation_ratio=None,
             ram_allocation_ratio=None, disk_allocation_ratio=None)
    # Read when the host manager is made (the options are not mutable).
    conf.set_override("disk_allocation_ratio", 2.0, group="filter_scheduler")
    for state in fresh_host_manager(conf, engine).host_states():
        assert (state.cpu_allocation_ratio, state.ram_allocation_ratio,
                state.disk_allocation_ratio) == (16.0, 1.5, 2.0)


def test_usage_and_stats_are_read(register, engine, host_manager):
    register(node("h1"), node("h2"), node("h3"))
    set_node(engine, "h1", vcpus_used=3, memory_mb_used=1000,
             local_gb_used=7, generation=4, running_vms=2,
             current_workload=1, stats="{}")
    set_node(engine, "h2", running_vms=9, current_workload=9,
             stats=json.dumps({"num_instances": "5", "io_workload": "2"}))
    set_node(engine, "h3", running_vms=1, stats="not json")
    states = _by_host(host_manager.host_states())
    h1 = states["h1"]
    assert (h1.vcpus_used, h1.memory_mb_used, h1.disk_gb_used,
            h1.generation, h1.num_instances, h1.num_io_ops) == (
        3, 1000, 7, 4, 2, 1)
    # running_vms, which claims keep current, over the agent's stat (nova's
    # compute writes both alike); the I/O count is the stat's.
    assert (states["h2"].num_instances, states["h2"].num_io_ops) == (9, 2)
    assert states["h3"].stats == {} and states["h3"].num_instances == 1


def test_aggregates_and_their_metadata(register, engine, host_manager):
    register(node("h1", zone="az1"))
    with engine.begin() as conn:
        agg_id = conn.execute(models.aggregates.insert().values(
            name="ssd", uuid="5d0e2f5c-0000-4000-8000-000000000001",
            deleted=0)).inserted_primary_key[0]
        conn.execute(models.aggregate_metadata.insert().values(
            aggregate_id=agg_id, key="disk", value="ssd", deleted=0))
        conn.execute(models.aggregate_hosts.insert().values(
            host="h1", aggregate_id=agg_id, deleted=0))
    [state] = host_manager.host_states()
    assert {a.name: a.metadata for a in state.aggregates} == {
        "az1": {"availability_zone": "az1"}, "ssd": {"disk": "ssd"}}
    # the uuid too: requested_destination.aggregates names them by it
    assert {a.name: a.uuid for a in state.aggregates}["ssd"] == \
        "5d0e2f5c-0000-4000-8000-000000000001"


def test_cached_states_do_not_read_sql_again(register, engine,
                                             host_manager):
    register(node("h1"))
    first = list(host_manager.cached_table().states)      # empty cache: reads SQL
    assert [s.host for s in first] == ["h1"]
    set_node(engine, "h1", memory_mb_used=4096)
    register(node("h2"))
    cached = list(host_manager.cached_table().states)
    assert [s.host for s in cached] == ["h1"]
    assert cached[0].memory_mb_used == 0
    fresh = _by_host(host_manager.host_states())
    assert set(fresh) == {"h1", "h2"}
    assert fresh["h1"].memory_mb_used == 4096
    assert {s.host for s in list(host_manager.cached_table().states)} == {"h1", "h2"}


def test_assume_replaces_known_nodes_only(register, host_manager):
    register(node("h1"))
    [state] = host_manager.host_states()
    from tests.unit.fakes import make_host
    host_manager.assume([state.consumed(1, 1024, 1),
                          make_host("stranger", node_id=99)])
    [cached] = list(host_manager.cached_table().states)
    assert cached.host == "h1" and cached.memory_mb_used == 1024


def test_a_claim_that_is_never_over_is_waited_for_a_bounded_time(
        register, host_manager):
    # A claim of this process assumed on h1 and never settled (its
    # request stuck, or a bug): a claim planned on it waits
    # ``assumed_wait`` seconds, then loses as a race would, to re-plan.
    register(node("h1"))
    [state] = host_manager.host_states()
    host_manager.assume([state.consumed(1, 1024, 1,
                                        generation=state.generation + 1)])
    planned_on_it = Claim(
        "00000000-0000-4000-8000-000000000001", state.node_id, "h1",
        state.generation + 1, 1, 512, 1)
    host_manager.assumed_wait = 0.05
    raised = []

    def claim():
        try:
            host_manager.await_assumed([planned_on_it])
        except ClaimConflict as e:
            raised.append(e)

    waiter = threading.Thread(target=claim, daemon=True)
    waiter.start()
    waiter.join(10)
    over = not waiter.is_alive()
    # Let a waiter that never timed out go (the assuming thread settles).
    host_manager.settle([dataclasses.replace(
        planned_on_it, generation=state.generation)], won=False)
    waiter.join(30)
    assert over, "await_assumed still waiting after 10 s"
    [conflict] = raised
    assert conflict.node_id == state.node_id
    assert "not over in 0.05 s" in str(conflict)
