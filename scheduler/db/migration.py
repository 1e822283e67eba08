"""Schema migrations (alembic) run against a live engine."""
import contextlib
import os
from typing import Callable, Iterator

from alembic import command
from alembic import config as alembic_config
from alembic.runtime import migration as alembic_migration
from alembic.script import ScriptDirectory
import sqlalchemy as sa

from scheduler import exception

_SCRIPTS = os.path.join(os.path.dirname(__file__), "migrations")

#: The lock concurrent upgrades take turns on (PostgreSQL's advisory lock
#: key, MySQL's GET_LOCK name), and how long one waits for another's.
_LOCK_KEY = 0x5C4ED01E
_LOCK_NAME = "scheduler-db-sync"
LOCK_TIMEOUT = 600


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
    with _locked_transaction(engine) as connection:
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


@contextlib.contextmanager
def _locked_transaction(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A transaction that holds the upgrade lock until it has committed:
    one upgrade at a time. Two 'db sync' at once would both find the same
    revision and both run its migrations, and the second fail on what the
    first made. The lock is taken before the revision is read, so the
    second waits and then finds the schema at head.

    :raises ServiceUnavailable: on MySQL, another upgrade held the lock
        for :data:`LOCK_TIMEOUT` seconds.
    """
    dialect = engine.dialect.name
    if dialect == "mysql":
        # A session's lock: MySQL's DDL commits by itself, each time. It
        # is let go only after the transaction, with the new revision in
        # alembic_version, has committed: let go before, the next upgrade
        # read the revision the first was replacing and ran its migration
        # again ("Duplicate column name"). Its names are the server's,
        # not a database's: name the database.
        name = f"{_LOCK_NAME}:{engine.url.database}"[:64]
        with engine.connect() as connection:
            got = connection.execute(
                sa.text("SELECT GET_LOCK(:name, :timeout)"),
                {"name": name, "timeout": LOCK_TIMEOUT}).scalar()
            connection.commit()
            if got != 1:
                raise exception.ServiceUnavailable(
                    f"another 'scheduler-manage db sync' has been upgrading "
                    f"the schema for {LOCK_TIMEOUT} s; let it finish, then "
                    f"run this one again")
            try:
                with connection.begin():
                    yield connection
            finally:
                connection.execute(sa.text("SELECT RELEASE_LOCK(:name)"),
                                   {"name": name})
                connection.commit()
        return
    with engine.begin() as connection:
        if dialect == "postgresql":
            # Held to the end of the transaction, which is the whole
            # upgrade.
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"),
                               {"key": _LOCK_KEY})
        elif dialect == "sqlite":
            # The write lock, before anything is read: a transaction that
            # read first cannot write once another has committed (in WAL
            # mode SQLite says "database is locked" at once, without
            # waiting). The transaction begun so far has done nothing.
            driver = connection.connection.driver_connection
            if driver.in_transaction:
                driver.execute("COMMIT")
            driver.execute("BEGIN IMMEDIATE")
        yield connection


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
