"""Whether the database ``[database] connection`` names can be used,
checked before a command or the server touches it: the URL loads (dialect,
driver, arguments), a SQLite file is there (only ``db sync`` may create
it), the server answers within a bound, the schema is at this code's head,
and this user may do every write the server does. Each refusal is one
line naming the option or the database, and the fix.
"""
from __future__ import annotations

import os

from oslo_config import cfg
from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler import errors
from scheduler import exception
from scheduler.db.engine import engine_url
from scheduler.db import migration
from scheduler.db import models
from scheduler.service import health


def database_url(conf: cfg.ConfigOpts) -> sa.engine.URL:
    """``[database] connection`` as a URL whose dialect and driver load,
    and whose arguments (with ``connection_parameters``) SQLAlchemy takes.

    :raises ConfigError: the value is not a URL, names a dialect SQLAlchemy
        does not have or a driver that is not installed, or an argument
        SQLAlchemy cannot convert (:func:`errors.driver_refused`); naming the
        option, the file that sets it and the fix, never the password.
    """
    where = errors.database_option(conf)
    try:
        url = sa.engine.make_url(conf.database.connection)
    except sa.exc.ArgumentError:
        # Not echoed: a value that does not parse may still hold a password.
        raise exception.ConfigError(
            f"{where}: not a database URL; write it as "
            f"dialect+driver://user:password@host/database, e.g. "
            f"mysql+pymysql://scheduler:PASSWORD@db.example.org/scheduler "
            f"or sqlite:////var/lib/scheduler/scheduler.sqlite") from None
    shown = url.render_as_string(hide_password=True)
    try:
        dialect = url.get_dialect()
    except sa.exc.NoSuchModuleError:
        raise exception.ConfigError(
            f"{where}: {shown}: SQLAlchemy has no database dialect "
            f"{url.get_backend_name()!r}; use mysql+pymysql, postgresql or "
            f"sqlite") from None
    try:
        dialect.import_dbapi()
    except ImportError as e:
        raise exception.ConfigError(
            f"{where}: {shown}: its driver {dialect.driver} is not "
            f"installed ({e}); install it or name an installed driver "
            f"in the URL") from None
    try:
        # Connects to nothing: SQLAlchemy converts the driver's arguments
        # here (int() of connect_timeout), as oslo.db's engine would.
        sa.create_engine(engine_url(conf),
                         poolclass=sa.pool.NullPool).dispose()
    except (ValueError, TypeError) as e:
        raise errors.driver_refused(conf, e) from None
    return url


def sqlite_path(conf: cfg.ConfigOpts) -> str | None:
    """The file of a SQLite ``[database] connection``, else None."""
    url = sa.engine.make_url(conf.database.connection)
    if url.get_backend_name() != "sqlite" or url.database in (
            None, "", ":memory:"):
        return None
    return url.database


def check_database(conf: cfg.ConfigOpts, create: bool = False,
                   config_given: bool = True) -> None:
    """Refuse a SQLite file that is not there before SQLite creates it
    empty: only ``db sync`` (``create``) may, and only in an existing
    directory.

    :raises ConfigError: naming the path and what to do, or the option
        when it names no usable database (:func:`database_url`).
    """
    url = database_url(conf)
    path = sqlite_path(conf)
    if path is None and url.get_backend_name() != "sqlite":
        # One bounded attempt before oslo.db's (10 x 10 s on MariaDB, and
        # no time limit at all on a server that accepts and never answers).
        problem = health.DatabaseProbe(conf).problem()
        if problem:
            raise exception.ConfigError(problem)
    if path is None or os.path.exists(path):
        return
    hint = "" if config_given else (
        " (no --config-file given, so [database] connection is the "
        "default under [DEFAULT] state_path)")
    directory = os.path.dirname(os.path.abspath(path))
    if not create:
        raise exception.ConfigError(
            f"database file {path} does not exist{hint}; run "
            f"'scheduler-manage db sync' to create it, or point [database] "
            f"connection at the right file")
    if not os.path.isdir(directory):
        raise exception.ConfigError(
            f"cannot create database file {path}: directory {directory} "
            f"does not exist{hint}; create it or fix [database] connection")


def require_schema(conf: cfg.ConfigOpts, engine: sa.Engine) -> None:
    """Everything but ``db sync``/``db version`` needs our tables, at the
    revision this code was written for (:func:`migration.problem`).

    :raises ConfigError: naming the database, its revision and the fix.
    """
    problem = migration.problem(migration.version(engine),
                                errors.database_name(conf))
    if problem:
        raise exception.ConfigError(problem)


def require_writable(conf: cfg.ConfigOpts, engine: sa.Engine) -> None:
    """The server writes its heartbeat, every claim and stack: a user who
    may read but not write those tables (SQLite's read-only file, a GRANT
    SELECT on PostgreSQL or MariaDB), or may not do one of the writes the
    server does (an UPDATE but no INSERT or DELETE, no grant on one
    table, no USAGE on PostgreSQL's id sequences), is refused before it
    starts, not on its first heartbeat, claim, stack or release after.
    Each write is of no row, in a transaction rolled back: the database
    checks the privilege all the same.

    :raises oslo_db.exception.DBError: the database refused the first
        write (:func:`scheduler.errors.describe` names it read-only).
    :raises ConfigError: it refused a later one, named
        (:func:`scheduler.errors.refused_write`).
    """
    with engine.connect() as conn, conn.begin() as transaction:
        probes = _write_probes(conn.dialect.name == "postgresql")
        for n, (what, statement, sequence) in enumerate(probes):
            try:
                conn.execute(statement)
            except (db_exc.DBError, sa.exc.DBAPIError) as e:
                # The first write refused: none at all, the line of
                # errors.describe ("read-only").
                line = None if n == 0 else errors.refused_write(
                    e, conf, what, sequence)
                if line is None:
                    raise
                raise exception.ConfigError(line) from e
        transaction.rollback()


def _write_probes(postgresql: bool) -> list[tuple[str, sa.Executable, bool]]:
    """Every kind of write the server does, each of no row: ``(what the
    grant is on, statement, whether it is a sequence)``, in the order
    :func:`require_writable` tries them."""
    writes: list[tuple[sa.Table, tuple[str, ...]]] = [
        (models.services, ("UPDATE", "INSERT")),
        (models.compute_nodes, ("UPDATE",)),
        (models.allocations, ("UPDATE", "INSERT", "DELETE")),
        (models.claim_groups, ("UPDATE", "INSERT")),
        (models.stacks, ("UPDATE", "INSERT", "DELETE")),
        (models.stack_instances, ("INSERT", "DELETE")),
        (models.drains, ("INSERT", "DELETE")),
        (models.drain_moves, ("UPDATE", "INSERT", "DELETE")),
    ]
    if postgresql:
        # Its change-tracking triggers (migration 0003) run as the writer
        # (MariaDB's as their definer) and update the counter.
        writes.append((models.change_counter, ("UPDATE",)))
    probes: list[tuple[str, sa.Executable, bool]] = []
    for table, kinds in writes:
        key = table.primary_key.columns[0]
        for kind in kinds:
            if kind == "UPDATE":
                statement = table.update().where(sa.false()).values(
                    {key: key})
            elif kind == "INSERT":
                # Every column: MariaDB refuses a list that leaves out one
                # without a default even when no row is inserted.
                statement = table.insert().from_select(
                    list(table.c), sa.select(table).where(sa.false()))
            else:
                statement = table.delete().where(sa.false())
            probes.append((f"{kind} on table {table.name}", statement, False))
        if "INSERT" in kinds and postgresql and isinstance(
                key.type, sa.Integer):
            # A new row's id comes from the column's sequence, which needs
            # a grant of its own (USAGE); this spends one id (a sequence
            # is not rolled back).
            probes.append((
                f"USAGE on the sequence of {table.name}.{key.name}",
                sa.select(sa.func.nextval(sa.func.pg_get_serial_sequence(
                    table.name, key.name))), True))
    return probes
