"""Schema migrations (alembic) run against a live engine."""
import os
from typing import Callable

from alembic import command
from alembic import config as alembic_config
from alembic.runtime import migration as alembic_migration
from alembic.script import ScriptDirectory
import sqlalchemy as sa

_SCRIPTS = os.path.join(os.path.dirname(__file__), "migrations")


def _config(connection: sa.Connection) -> alembic_config.Config:
    cfg = alembic_config.Config()
    cfg.set_main_option("script_location", _SCRIPTS)
    cfg.attributes["connection"] = connection
    return cfg


def upgrade(engine: sa.Engine, revision: str = "head",
            on_step: Callable[[str, int, int], None] | None = None) -> None:
    """Create the schema or bring it up to ``revision``; safe to re-run.

    :param on_step: called as ``on_step(revision, applied, total)`` after
        each migration is applied (a big database may take a while).
    """
    with engine.begin() as connection:
        config = _config(connection)
        if on_step is not None:
            current = alembic_migration.MigrationContext.configure(
                connection).get_current_revision()
            total = len(list(_scripts().iterate_revisions(
                revision, current or "base")))
            applied = [0]

            def step(ctx, step, heads, run_args) -> None:
                applied[0] += 1
                on_step(step.up_revision_id, applied[0], total)
            config.attributes["on_version_apply"] = step
        command.upgrade(config, revision)


def version(engine: sa.Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def head() -> str:
    """The revision this code's migrations end at."""
    return _scripts().get_current_head()


def known(revision: str) -> bool:
    """Whether ``revision`` is one of this code's migrations (a database
    at an unknown one was upgraded by newer code)."""
    return any(script.revision == revision
               for script in _scripts().walk_revisions())


def problem(current: str | None, name: str) -> str | None:
    """Why this code cannot run on the database ``name`` (as an operator
    should read it, password hidden) whose schema is at revision
    ``current`` (:func:`version`; None: no schema), in one line
    naming the fix; None when it is at this code's head. The one rule the
    server, the other commands, ``db version`` (the unit's ExecStartPre)
    and the upgrade check apply."""
    if current is None:
        return (f"no scheduler schema in {name}; run 'scheduler-manage db "
                f"sync' first")
    latest = head()
    if current == latest:
        return None
    if not known(current):
        return (f"schema in {name} is at revision {current}, which this "
                f"code does not know (head is {latest}): the database was "
                f"upgraded by a newer release; run that release")
    return (f"schema in {name} is at revision {current}, head is {latest}; "
            f"run 'scheduler-manage db sync'")


def _scripts() -> ScriptDirectory:
    cfg = alembic_config.Config()
    cfg.set_main_option("script_location", _SCRIPTS)
    return ScriptDirectory.from_config(cfg)
