"""Incremental refresh: a refresh costs what changed, whoever changed it."""
from __future__ import annotations

import datetime

import sqlalchemy as sa

from scheduler.db import models
from tests.unit.fakes import node
from tests.unit.fakes import set_node
from tests.unit.fakes import set_service


def _states(host_manager):
    return {s.host: s for s in host_manager.table().states}


def test_nothing_changed_rebuilds_nothing(register, host_manager):
    register(node("h1"), node("h2"))
    assert host_manager.refresh() == 2      # first read is a full one
    table = host_manager.table()
    assert host_manager.refresh() == 0
    assert host_manager.table() is table


def test_a_write_by_anyone_is_picked_up_alone(register, engine,
                                              host_manager):
    register(node("h1"), node("h2"), node("h3"))
    host_manager.refresh()
    # A compute agent (or an operator's SQL) writes without touching our
    # generation: the trigger still stamps the row.
    set_node(engine, "h2", memory_mb_used=1234)
    assert host_manager.refresh() == 1
    assert _states(host_manager)["h2"].memory_mb_used == 1234
    assert host_manager.table().memory_mb_used[
        host_manager.table().positions[_states(host_manager)["h2"].node_id]
    ] == 1234


def test_heartbeats_alone_do_not_count_as_changes(register, engine,
                                                  host_manager):
    register(node("h1"))
    host_manager.refresh()
    with engine.begin() as conn:
        s = models.services
        conn.execute(s.update().values(report_count=s.c.report_count + 1))
    assert host_manager.refresh() == 0


def test_a_stale_heartbeat_takes_the_host_down_and_back(register, engine,
                                                         host_manager):
    register(node("h1"), node("h2"))
    assert all(s.service_up for s in _states(host_manager).values())
    old = datetime.datetime(2000, 1, 1)
    set_service(engine, "h1", last_seen_up=old, updated_at=old)
    states = _states(host_manager)
    assert states["h1"].service_up is False
    assert states["h2"].service_up is True
    assert not host_manager.table().service_up[
        host_manager.table().positions[states["h1"].node_id]]
    set_service(engine, "h1", last_seen_up=datetime.datetime.utcnow())
    assert _states(host_manager)["h1"].service_up is True


def test_admin_disable_is_picked_up(register, engine, host_manager):
    register(node("h1"))
    host_manager.refresh()
    set_service(engine, "h1", disabled=True, disabled_reason="maintenance")
    assert _states(host_manager)["h1"].service_disabled is True


def test_aggregate_changes_update_zones(register, engine, host_manager):
    register(node("h1", zone="az1"), node("h2", zone="az2"))
    host_manager.refresh()
    with engine.begin() as conn:
        m = models.aggregate_metadata
        conn.execute(m.update().where(m.c.value == "az2")
                     .values(value="az9"))
    table = host_manager.table()
    assert set(table.zones) == {"az1", "az9"}
    assert _states(host_manager)["h2"].availability_zones() == {"az9"}


def test_new_and_deleted_nodes(register, engine, host_manager):
    register(node("h1"), node("h2"))
    host_manager.refresh()
    register(node("h3"))
    assert set(_states(host_manager)) == {"h1", "h2", "h3"}
    set_node(engine, "h2", deleted=99)            # soft delete
    assert set(_states(host_manager)) == {"h1", "h3"}
    with engine.begin() as conn:                  # hard delete
        n = models.compute_nodes
        conn.execute(sa.delete(n).where(n.c.host == "h3"))
    assert set(_states(host_manager)) == {"h1"}


def test_own_claims_show_before_any_read(register, host_manager):
    register(node("h1"))
    [state] = host_manager.host_states()
    host_manager.assume([state.consumed(2, 2048, 20)])
    table = host_manager.cached_table()
    assert table.states[0].memory_mb_used == 2048
    assert table.memory_mb_used[0] == 2048
