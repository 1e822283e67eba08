"""The schema on every database: ``db sync`` from empty and from every
earlier revision, every revision in order, and models that match what the
migrations build.

The revisions are read from the migration scripts, not listed here, so a new
revision is walked on SQLite, PostgreSQL and MariaDB without touching this
file. The migrations have no downgrades (the project does not support going
back), so the walk goes up only.
"""
from __future__ import annotations

import subprocess
import sys
import uuid

from alembic import autogenerate
from alembic.runtime import migration as alembic_migration
from alembic.script import ScriptDirectory
import pytest
import sqlalchemy as sa

import scheduler.conf
from scheduler.sim import fleet
from scheduler.db import compute
from scheduler.db.engine import create_engine
from scheduler.hosts.rows import aggregates_by_host
from scheduler.db import migration
from scheduler.db import models
from scheduler.hosts.manager import HostManager
from tests.fixtures.config import write_config
from tests.functional.conftest import every_database
from tests.functional.conftest import node
from tests.functional.conftest import run_command

pytestmark = every_database


def _revisions() -> list[str]:
    """Every revision, oldest first (one line of history)."""
    script = ScriptDirectory(migration._SCRIPTS)
    assert len(script.get_heads()) == 1, "migrations must have one head"
    return [r.revision for r in reversed(list(script.walk_revisions()))]


REVISIONS = _revisions()
HEAD = REVISIONS[-1]


def _engine(url: str, tmp_path) -> sa.Engine:
    """An engine made the way the service makes it."""
    conf = scheduler.conf.new_conf()
    conf([], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("connection", url, group="database")
    return create_engine(conf)


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def test_every_revision_upgrades_in_order(database_url, tmp_path):
    engine = _engine(database_url, tmp_path)
    try:
        assert migration.version(engine) is None
        for revision in REVISIONS:
            migration.upgrade(engine, revision)
            assert migration.version(engine) == revision
        assert _tables(engine) >= {t.name for t in
                                   models.Base.metadata.sorted_tables}
    finally:
        engine.dispose()


@pytest.mark.parametrize("start", [None] + REVISIONS)
def test_db_sync_reaches_head_from(start, new_database, tmp_path):
    """``scheduler-manage db sync`` (the real command) from an empty
    database, from each earlier revision, and again at head (a no-op)."""
    url = new_database()
    engine = _engine(url, tmp_path)
    try:
        if start is not None:
            migration.upgrade(engine, start)
        config = write_config(tmp_path, {"state_path": tmp_path,
                                         "database.connection": url},
                              name=f"sync-{start}.conf")
        result = run_command("manage", "--config-file", str(config),
                             "db", "sync")
        assert result.returncode == 0
        assert migration.version(engine) == HEAD
    finally:
        engine.dispose()


def test_models_match_the_migrated_schema(database_url, tmp_path):
    """What oslo.db's ModelsMigrationsSync checks: alembic's comparison of
    models.py with the schema the migrations built finds nothing (tables,
    columns, types, nullability, indexes, unique constraints)."""
    engine = _engine(database_url, tmp_path)
    try:
        migration.upgrade(engine)
        with engine.connect() as conn:
            context = alembic_migration.MigrationContext.configure(
                conn, opts={"compare_type": True,
                            "include_object": _not_alembic_version})
            diff = autogenerate.compare_metadata(context,
                                                 models.Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def _not_alembic_version(obj, name, type_, reflected, compare_to) -> bool:
    return not (type_ == "table" and name == "alembic_version")


def test_db_sync_completes_a_migration_that_failed_half_way_on_mariadb(
        mariadb, tmp_path):
    """MariaDB has no transactional DDL: a migration that fails half-way
    (0003's triggers refused: a user without the TRIGGER privilege, or the
    binary log on without SUPER, as doc/source/databases.rst warns) leaves what it had
    created. Once the operator grants what was missing, ``db sync`` again
    finishes the job instead of failing on what is already there."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    mariadb.create_database(name)
    user = f"u{uuid.uuid4().hex[:12]}"
    password = uuid.uuid4().hex
    mariadb.execute(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY %s",
                    [password])
    mariadb.execute(f"GRANT ALL PRIVILEGES ON `{name}`.* TO "
                    f"'{user}'@'127.0.0.1'")
    mariadb.execute(f"REVOKE TRIGGER ON `{name}`.* FROM '{user}'@'127.0.0.1'")
    url = (f"mysql+pymysql://{user}:{password}@127.0.0.1:{mariadb.port}/"
           f"{name}?charset=utf8mb4")
    config = write_config(tmp_path, {"state_path": tmp_path,
                                     "database.connection": url})
    first = run_command("manage", "--config-file", str(config), "db", "sync",
                        check=False)
    assert first.returncode == 1
    # Not "read-only for this user": it may write, not make triggers.
    assert "refused to create triggers" in first.stderr, first.stderr
    assert "grant this user the TRIGGER privilege" in first.stderr
    mariadb.execute(f"GRANT TRIGGER ON `{name}`.* TO '{user}'@'127.0.0.1'")
    again = run_command("manage", "--config-file", str(config), "db", "sync",
                        check=False)
    assert again.returncode == 0, again.stderr
    engine = _engine(url, tmp_path)
    try:
        assert migration.version(engine) == HEAD
        fleet.register(engine, [node("h1")])
        with engine.connect() as conn:
            counters = compute.changes(conn)[0]
            stamp = conn.execute(sa.select(models.compute_nodes.c.change_seq)
                                 ).scalar_one()
        assert stamp == counters.nodes == 1
    finally:
        engine.dispose()


def test_two_db_syncs_at_once_both_succeed(new_database, tmp_path):
    """Two operators (or two hosts' deployment tools) run ``db sync`` at
    the same time on a new database: one creates the schema, the other
    waits for it and finds it at head; neither fails."""
    for attempt in range(5):
        url = new_database()
        config = write_config(tmp_path, {"state_path": tmp_path,
                                         "database.connection": url},
                              name=f"race-{attempt}.conf")
        command = [sys.executable, "-m", "scheduler.cmd.manage",
                   "--config-file", str(config), "db", "sync"]
        procs = [subprocess.Popen(command, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        assert [code for code, _ in results] == [0, 0], results
        engine = _engine(url, tmp_path)
        try:
            assert migration.version(engine) == HEAD
        finally:
            engine.dispose()


@pytest.mark.databases("mysql")
def test_the_upgrade_lock_is_let_go_once_the_new_revision_is_committed(
        database_url, tmp_path):
    """MySQL's upgrade lock is a session's (GET_LOCK). It was let go
    before the transaction that writes alembic_version had committed: a
    second 'db sync' waiting for it read the revision being replaced and
    ran that migration again ("Duplicate column name 'expired_node_id'").
    When the lock is let go, another session sees the new revision."""
    engine = _engine(database_url, tmp_path)
    other = _engine(database_url, tmp_path)
    seen: list[str | None] = []

    def released(conn, cursor, statement, *args) -> None:
        if "RELEASE_LOCK" in statement:
            seen.append(migration.version(other))
    sa.event.listen(engine, "before_cursor_execute", released)
    try:
        migration.upgrade(engine, REVISIONS[0])
        migration.upgrade(engine)
    finally:
        engine.dispose()
        other.dispose()
    assert seen == [REVISIONS[0], HEAD]


def test_db_sync_on_a_schema_from_a_newer_release_says_so(database_url,
                                                          tmp_path):
    """A database a newer release has upgraded: ``db sync`` changes
    nothing and says what ``db version`` and the upgrade check say, not
    alembic's "Can't locate revision" as if it were a bug."""
    engine = _engine(database_url, tmp_path)
    try:
        migration.upgrade(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version "
                                 "SET version_num = '0099'"))
        config = write_config(tmp_path, {"state_path": tmp_path,
                                         "database.connection": database_url})
        result = run_command("manage", "--config-file", str(config), "db",
                             "sync", check=False)
        assert result.returncode == 1
        assert result.stderr.startswith("ERROR: schema in "), result.stderr
        assert (f"is at revision 0099, which this code does not know (head "
                f"is {HEAD}): the database was upgraded by a newer release; "
                f"run that release\n") in result.stderr
        assert migration.version(engine) == "0099"
    finally:
        engine.dispose()


def _insert_rows(engine: sa.Engine) -> None:
    """Rows of every table the schema has at its current revision, as a
    deployment of that release would hold them (a move in flight and a
    stack once those exist)."""
    inspector = sa.inspect(engine)
    tables = set(inspector.get_table_names())
    allocation_columns = {c["name"] for c in
                          inspector.get_columns("allocations")}
    statements = [
        "INSERT INTO services (id, uuid, host, " + ('"binary"' if
            engine.dialect.name != "mysql" else "`binary`") +
        ", topic, report_count, disabled, disabled_reason, forced_down,"
        " version, deleted) VALUES (1, 's1', 'h1', 'nova-compute',"
        " 'compute', 5, TRUE, 'maintenance', FALSE, 1, 0)",
        "INSERT INTO compute_nodes (id, uuid, service_id, host,"
        " hypervisor_hostname, hypervisor_type, hypervisor_version, vcpus,"
        " memory_mb, local_gb, vcpus_used, memory_mb_used, local_gb_used,"
        " running_vms, cpu_info, stats, cpu_allocation_ratio, generation,"
        " deleted) VALUES (1, 'n1', 1, 'h1', 'h1', 'QEMU', 8002000, 8,"
        " 16384, 200, 3, 3072, 30, 2, '{}', '{\"io_workload\": \"1\"}',"
        " 1.5, 7, 0)",
        "INSERT INTO compute_nodes (id, uuid, host, hypervisor_hostname,"
        " hypervisor_type, hypervisor_version, vcpus, memory_mb, local_gb,"
        " vcpus_used, memory_mb_used, local_gb_used, cpu_info, deleted)"
        " VALUES (2, 'n2', 'h2', 'h2', 'QEMU', 1, 8, 16384, 200, 1, 1024,"
        " 10, '{}', 0)",
        "INSERT INTO aggregates (id, uuid, name, deleted) VALUES"
        " (1, 'a1', 'az1', 0)",
        "INSERT INTO aggregate_hosts (host, aggregate_id, deleted) VALUES"
        " ('h1', 1, 0)",
        "INSERT INTO aggregate_metadata (aggregate_id, " + (
            "`key`" if engine.dialect.name == "mysql" else '"key"') +
        ", value, deleted) VALUES (1, 'availability_zone', 'az1', 0)",
        "INSERT INTO allocations (consumer_uuid, compute_node_id,"
        " project_id, vcpus, memory_mb, disk_gb) VALUES"
        " ('c1', 1, 'p1', 2, 2048, 20)",
    ]
    if "source_node_id" in allocation_columns:
        statements.append(
            "INSERT INTO allocations (consumer_uuid, compute_node_id,"
            " vcpus, memory_mb, disk_gb, source_node_id, source_vcpus,"
            " source_memory_mb, source_disk_gb) VALUES"
            " ('c2', 1, 1, 1024, 10, 2, 1, 1024, 10)")
    else:
        statements.append(
            "INSERT INTO allocations (consumer_uuid, compute_node_id,"
            " vcpus, memory_mb, disk_gb) VALUES ('c2', 2, 1, 1024, 10)")
    if "claim_groups" in tables:
        statements.append("INSERT INTO claim_groups (uuid, generation)"
                          " VALUES ('g1', 3)")
    if "stacks" in tables:
        statements.append("INSERT INTO stacks (stack_id, definition)"
                          " VALUES ('st1', '{\"resources\": {}}')")
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)


@pytest.mark.parametrize("start", REVISIONS[:-1])
def test_rows_survive_db_sync_and_are_tracked_after_it(start, database_url,
                                                        tmp_path):
    """A deployment with rows at each earlier revision upgrades to head:
    every row is still there as it was, and afterwards every write is
    stamped and counted, and a host manager reads the nodes."""
    engine = _engine(database_url, tmp_path)
    try:
        migration.upgrade(engine, start)
        _insert_rows(engine)
        migration.upgrade(engine)
        nodes = models.compute_nodes
        with engine.connect() as conn:
            node = conn.execute(sa.select(nodes).where(nodes.c.id == 1)
                                ).one()
            assert (node.vcpus_used, node.memory_mb_used, node.generation,
                    node.cpu_allocation_ratio, node.deleted) == (
                3, 3072, 7, 1.5, 0)
            service = conn.execute(sa.select(models.services)).one()
            assert (service.disabled, service.disabled_reason,
                    service.report_count) == (True, "maintenance", 5)
            assert conn.execute(sa.select(sa.func.count()).select_from(
                models.allocations)).scalar() == 2
            by_host = aggregates_by_host(compute.aggregates(conn))
            assert by_host["h1"][0].metadata == {"availability_zone": "az1"}
            before = compute.changes(conn)[0]
        conf = scheduler.conf.new_conf()
        conf([], default_config_files=[])
        conf.set_override("state_path", str(tmp_path))
        host_manager = HostManager(conf, engine)
        host_manager.refresh()
        assert {s.host for s in host_manager.cached_table().states} == {
            "h1"}
        with engine.begin() as conn:
            conn.execute(nodes.update().where(nodes.c.id == 1)
                         .values(memory_mb_used=4096))
            conn.execute(models.services.update().values(disabled=False))
            conn.execute(models.aggregate_metadata.update()
                         .values(value="az2"))
            conn.execute(nodes.delete().where(nodes.c.id == 2))
        with engine.connect() as conn:
            after, changed = compute.changes(conn, since=before.nodes)
        assert [(r.id, r.change_seq) for r in changed] == [
            (1, before.nodes + 1)]
        assert after.nodes == before.nodes + 1
        assert after.node_deletes == before.node_deletes + 1
        assert after.services > before.services
        assert after.aggregates > before.aggregates
        host_manager.refresh()
        (state,) = host_manager.cached_table().states
        assert (state.memory_mb_used, state.service_disabled) == (4096,
                                                                  False)
        host_manager.close()
    finally:
        engine.dispose()


@pytest.mark.databases("mysql")
def test_db_sync_completes_0007_interrupted_after_its_drop_trigger(
        database_url, tmp_path):
    """0007 replaces a trigger: DROP, then CREATE. On MariaDB the DROP
    commits by itself; a sync stopped before the CREATE (Ctrl-C while it
    waits for a running transaction on ``services`` to let go) leaves the
    schema at 0005 without the trigger, and the next ``db sync`` must
    make it rather than fail on dropping it again."""
    engine = _engine(database_url, tmp_path)
    try:
        migration.upgrade(engine, "0005")
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP TRIGGER services_count_delete")
        config = write_config(tmp_path, {"state_path": tmp_path,
                                         "database.connection": database_url})
        result = run_command("manage", "--config-file", str(config), "db",
                             "sync", check=False)
        assert result.returncode == 0, result.stderr
        assert migration.version(engine) == HEAD
        fleet.register(engine, [node("h1")])
        with engine.connect() as conn:
            before = compute.changes(conn)[0]
        with engine.begin() as conn:
            conn.execute(models.services.delete())
        with engine.connect() as conn:
            after = compute.changes(conn)[0]
        assert after.node_deletes == before.node_deletes + 1
    finally:
        engine.dispose()
