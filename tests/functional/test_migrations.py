"""The schema on every database: ``db sync`` from empty and from every
earlier revision, every revision in order, and models that match what the
migrations build.

The revisions are read from the migration scripts, not listed here, so a new
revision is walked on SQLite, PostgreSQL and MariaDB without touching this
file. The migrations have no downgrades (the project does not support going
back), so the walk goes up only.
"""
from __future__ import annotations

from alembic import autogenerate
from alembic.runtime import migration as alembic_migration
from alembic.script import ScriptDirectory
import pytest
import sqlalchemy as sa

import scheduler.conf
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import models
from tests.fixtures.config import write_config
from tests.functional.conftest import run_command


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
    return db_api.create_engine(conf)


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
