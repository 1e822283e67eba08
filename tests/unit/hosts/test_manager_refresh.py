"""Incremental refresh: a refresh costs what changed, whoever changed it."""
from __future__ import annotations

import datetime
import threading
import time

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


def test_a_refresh_reads_counters_and_changed_nodes_in_one_statement(
        register, engine, host_manager, sqlite_statements):
    # One round trip per request on PostgreSQL and MySQL, whether or not a
    # node changed (liveness, read at most every second, is not due here).
    register(node("h1"), node("h2"))
    host_manager.refresh()
    host_manager.liveness_interval = 3600
    sqlite_statements.clear()
    assert host_manager.refresh() == 0
    assert len(sqlite_statements) == 1, sqlite_statements
    set_node(engine, "h2", memory_mb_used=99)
    sqlite_statements.clear()
    assert host_manager.refresh() == 1
    assert len(sqlite_statements) == 1, sqlite_statements


def test_refreshes_keep_one_connection_and_no_read_transaction(
        register, engine, host_manager):
    register(node("h1"), node("h2"))
    host_manager.refresh()
    checkouts = []

    def checkout(*args):
        checkouts.append(1)
    sa.event.listen(engine, "checkout", checkout)
    try:
        for used in (1, 2, 3):
            set_node(engine, "h1", memory_mb_used=used)
            checkouts.clear()
            assert host_manager.refresh() == 1
            assert checkouts == []
            # The kept connection holds no snapshot between requests: a
            # checkpoint can take in every committed write.
            with engine.connect() as conn:
                busy, _, _ = conn.exec_driver_sql(
                    "PRAGMA wal_checkpoint(TRUNCATE)").one()
            assert busy == 0
    finally:
        sa.event.remove(engine, "checkout", checkout)
    host_manager.close()
    assert _states(host_manager)["h1"].memory_mb_used == 3


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


def test_requests_queued_for_the_cycle_share_one_refresh(
        register, engine, host_manager, sqlite_statements):
    """Two requests that arrive while a third plans need the table as SQL
    was when they arrived: the first of them reads it, the second is
    served by that read, and both see a write made before they arrived."""
    register(node("h1"), node("h2"))
    host_manager.refresh()
    host_manager._cycle = cycle = _CountingLock()
    seen = {}

    def plan(name):
        with host_manager.planning() as table:
            seen[name] = table.states[table.positions[ids["h2"]]]

    with host_manager.planning() as table:
        ids = {s.host: s.node_id for s in table.states}
        set_node(engine, "h2", memory_mb_used=4321)
        waiting = [threading.Thread(target=plan, args=(n,)) for n in "bc"]
        for t in waiting:
            t.start()
        # Both are queued behind this cycle before it ends.
        deadline = time.monotonic() + 5
        while cycle.waiting < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sqlite_statements.clear()
    for t in waiting:
        t.join(5)
    reads = [s for s in sqlite_statements if "change_counter" in s]
    assert len(reads) == 1, reads
    assert seen["b"].memory_mb_used == seen["c"].memory_mb_used == 4321


def test_a_request_arriving_after_a_refresh_began_reads_again(
        register, engine, host_manager):
    register(node("h1"))
    host_manager.refresh()
    set_node(engine, "h1", memory_mb_used=777)
    # Sequential requests: each arrives after the previous refresh, so
    # each reads (and sees what was written in between).
    with host_manager.planning() as table:
        assert table.states[0].memory_mb_used == 777
    set_node(engine, "h1", memory_mb_used=778)
    with host_manager.planning() as table:
        assert table.states[0].memory_mb_used == 778


class _CountingLock:
    """The host manager's cycle lock, counting the threads blocked on it."""

    def __init__(self):
        self._lock = threading.RLock()
        self.waiting = 0

    def __enter__(self):
        if not self._lock.acquire(blocking=False):
            self.waiting += 1
            self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()
