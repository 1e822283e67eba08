"""Schema migrations (alembic) run against a live engine."""
import os

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


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    """Create the schema or bring it up to ``revision``; safe to re-run."""
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)


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


def _scripts() -> ScriptDirectory:
    cfg = alembic_config.Config()
    cfg.set_main_option("script_location", _SCRIPTS)
    return ScriptDirectory.from_config(cfg)
