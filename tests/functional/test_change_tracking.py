"""Change tracking (migrations 0003, 0007 and 0008) on every database: any
writer's change is stamped and counted, heartbeats are not, and on the
servers a writer cannot take a stamp while an earlier one is uncommitted —
so a reader that has seen stamp N has seen every stamp below it."""
from __future__ import annotations

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.sim import fleet
from scheduler.db import clock
from scheduler.db import compute
from scheduler.db import models
from scheduler.hosts.manager import HostManager
from tests.functional.conftest import every_database
from tests.functional.conftest import node

pytestmark = every_database

nodes = models.compute_nodes
services = models.services


@pytest.fixture
def engine(engine):
    fleet.register(engine, [node(h) for h in ("h1", "h2")])
    return engine


def _write(engine: sa.Engine, statement) -> None:
    with engine.begin() as conn:
        conn.execute(statement)


def _stamp(engine: sa.Engine, table: sa.Table, host: str) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.select(table.c.change_seq)
                            .where(table.c.host == host)).scalar_one()


def _counters(engine: sa.Engine) -> compute.Counters:
    with engine.connect() as conn:
        return compute.changes(conn)[0]


def test_node_writes_are_stamped_in_order_and_deletes_counted(engine):
    before = _counters(engine)
    assert _stamp(engine, nodes, "h1") > 0
    assert _stamp(engine, nodes, "h2") > _stamp(engine, nodes, "h1")
    _write(engine, nodes.update().where(nodes.c.host == "h1")
           .values(memory_mb_used=512))
    stamp = _stamp(engine, nodes, "h1")
    assert stamp == before.nodes + 1 == _counters(engine).nodes
    _write(engine, nodes.delete().where(nodes.c.host == "h2"))
    assert _counters(engine).node_deletes == before.node_deletes + 1
    with engine.connect() as conn:
        counters, changed = compute.changes(conn, since=before.nodes)
    assert [row.host for row in changed] == ["h1"]
    assert counters.nodes == stamp


def test_a_changed_node_reads_the_same_every_time_and_on_every_connection(
        engine):
    # On PostgreSQL the read is a prepared statement after its first run
    # on a connection: its rows must be what SQLAlchemy's own typed read
    # gives, floats, text and NULLs included.
    _write(engine, nodes.update().where(nodes.c.host == "h1").values(
        cpu_allocation_ratio=1.5, ram_allocation_ratio=None,
        stats='{"io": 3}', metrics=None))
    since = _stamp(engine, nodes, "h1") - 1
    with engine.connect() as conn:
        typed = [tuple(row) for row in conn.execute(
            sa.select(*compute._NODE_COLUMNS)
            .where(nodes.c.change_seq > since))]
    reads = []
    for _ in range(2):
        with engine.connect() as conn:
            reads += [compute.changes(conn, since=since)[1] for _ in range(2)]
    assert [row.host for row in reads[0]] == ["h1"]
    assert all([tuple(row) for row in read] == typed for read in reads)
    assert isinstance(reads[-1][0].cpu_allocation_ratio, float)


def test_heartbeats_are_not_changes_but_admin_changes_are(engine):
    before = _counters(engine)
    stamp = _stamp(engine, services, "h1")
    _write(engine, services.update().where(services.c.host == "h1").values(
        report_count=services.c.report_count + 1,
        last_seen_up=clock.utcnow(), updated_at=clock.utcnow()))
    assert _counters(engine).services == before.services
    assert _stamp(engine, services, "h1") == stamp
    _write(engine, services.update().where(services.c.host == "h1")
           .values(disabled=True, disabled_reason="maintenance"))
    assert _counters(engine).services == before.services + 1
    assert _stamp(engine, services, "h1") == before.services + 1


def test_a_hard_deleted_service_is_counted_as_a_hard_delete(engine):
    # It leaves no stamped row: a refresh must read everything (0007).
    before = _counters(engine)
    _write(engine, services.delete().where(services.c.host == "h1"))
    after = _counters(engine)
    assert after.services == before.services + 1
    assert after.node_deletes == before.node_deletes + 1


def test_aggregate_changes_are_counted(engine):
    before = _counters(engine).aggregates
    md = models.aggregate_metadata
    _write(engine, md.update().where(md.c.key == "availability_zone")
           .values(value="az9"))
    after_update = _counters(engine).aggregates
    assert after_update > before
    _write(engine, models.aggregate_hosts.delete().where(
        models.aggregate_hosts.c.host == "h2"))
    assert _counters(engine).aggregates > after_update


def _lock_timeout_one_second(conn: sa.Connection) -> None:
    if conn.dialect.name == "mysql":
        conn.exec_driver_sql("SET SESSION innodb_lock_wait_timeout=1")
    else:
        conn.exec_driver_sql("SET lock_timeout = '1s'")


@pytest.mark.databases("postgresql", "mysql")
def test_no_stamp_is_taken_while_an_earlier_writer_is_uncommitted(engine):
    """Writer A stamps h1 and has not committed. Writer B, on another
    node, cannot get a stamp (it waits on the counter row and times out):
    stamps are handed out in commit order. After A commits, B gets the
    next one, and a reader that missed neither sees both in order."""
    seen = _counters(engine).nodes
    with engine.connect() as writer_a:
        writer_a.begin()
        writer_a.execute(nodes.update().where(nodes.c.host == "h1")
                         .values(memory_mb_used=1))
        with engine.connect() as reader:
            counters, changed = compute.changes(reader, since=seen)
            assert (counters.nodes, changed) == (seen, [])
            reader.rollback()
        # MariaDB's 1205 arrives as DBDeadlock; PostgreSQL's lock timeout
        # (55P03) as the raw OperationalError (oslo.db 18).
        with pytest.raises((db_exc.DBDeadlock, sa.exc.OperationalError)):
            with engine.begin() as writer_b:
                _lock_timeout_one_second(writer_b)
                writer_b.execute(nodes.update().where(nodes.c.host == "h2")
                                 .values(memory_mb_used=2))
        writer_a.commit()
    _write(engine, nodes.update().where(nodes.c.host == "h2")
           .values(memory_mb_used=2))
    assert _stamp(engine, nodes, "h1") == seen + 1
    assert _stamp(engine, nodes, "h2") == seen + 2
    with engine.connect() as reader:
        assert [(r.host, r.change_seq) for r in sorted(
            compute.changes(reader, since=seen)[1],
            key=lambda r: r.change_seq)] == [("h1", seen + 1), ("h2", seen + 2)]


@pytest.mark.databases("postgresql")
def test_a_database_restored_from_a_backup_is_read_again_in_full(
        engine, database_server, conf):
    """A database that comes back without writes the table has read
    (restored from a backup, an asynchronous standby promoted, a crash
    that lost unflushed commits) stamps its next changes with numbers
    the table has seen already: on its new connection, a refresh reads
    everything. (The rule is the host manager's, the same on every
    database; PostgreSQL's template databases make the backup here.)"""
    host_manager = HostManager(conf, engine)
    host_manager.refresh()
    name = engine.url.database
    database_server.copy_database(name, f"{name}_backup")
    _write(engine, nodes.update().where(nodes.c.host == "h1")
           .values(memory_mb_used=1024))
    assert _used(host_manager) == {"h1": 1024, "h2": 0}

    database_server.restore_database(name, f"{name}_backup")
    engine.dispose()        # the pool's connections were to the old one
    # Stamped with the number h1's lost write had.
    _write(engine, nodes.update().where(nodes.c.host == "h2")
           .values(memory_mb_used=512))

    assert _used(host_manager) == {"h1": 0, "h2": 512}
    host_manager.close()


def _used(host_manager: HostManager) -> dict[str, int]:
    return {s.host: s.memory_mb_used for s in host_manager.host_states()}


@pytest.mark.databases("sqlite", "mysql")
def test_a_node_replaced_by_an_upsert_is_refreshed_once(engine, conf):
    """A compute agent that re-registers its node with the database's own
    upsert (SQLite's INSERT OR REPLACE, MySQL's REPLACE) deletes the old
    row and inserts a new one under a new id: a hard delete, which a
    refresh must see, or the host table keeps the old row beside the new
    one."""
    host_manager = HostManager(conf, engine)
    assert host_manager.refresh() == 2
    with engine.connect() as conn:
        old = conn.execute(sa.select(nodes).where(nodes.c.host == "h1")
                           ).one()._asdict()
    columns = ("uuid", "host", "hypervisor_hostname", "hypervisor_type",
               "hypervisor_version", "vcpus", "memory_mb", "local_gb",
               "vcpus_used", "memory_mb_used", "local_gb_used", "cpu_info",
               "deleted")
    verb = ("INSERT OR REPLACE" if engine.dialect.name == "sqlite"
            else "REPLACE")
    with engine.begin() as conn:
        conn.execute(sa.text(
            f"{verb} INTO compute_nodes ({', '.join(columns)}) VALUES "
            f"({', '.join(':' + c for c in columns)})"),
            dict({c: old[c] for c in columns}, memory_mb=8192))
    host_manager.refresh()
    states = [s for s in host_manager.cached_table().states
              if s.host == "h1"]
    assert [(s.node_id != old["id"], s.memory_mb_total)
            for s in states] == [(True, 8192)]
    host_manager.close()
