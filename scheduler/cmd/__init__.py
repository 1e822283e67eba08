"""Console entry points. Each parses its own flags with argparse and hands
``--config-file``/``--config-dir`` to oslo.config."""
from __future__ import annotations

import argparse
import os
from typing import Any, Mapping, Sequence

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import conf as sched_conf
from scheduler import exception


def version() -> str:
    """This package's version, as pbr derives it from git or metadata."""
    from pbr import version as pbr_version
    return pbr_version.VersionInfo("scheduler").version_string()


def key_value(text: str) -> tuple[str, str]:
    """argparse type for ``key=value``; the value may be empty or hold '='.

    :raises argparse.ArgumentTypeError: without '=' or with an empty key.
    """
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"expected key=value, got {text!r}")
    return key, value


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """``--config-file``, ``--config-dir`` and ``--version``."""
    parser.add_argument("--config-file", action="append", default=[],
                        metavar="PATH", help="configuration file (repeatable)")
    parser.add_argument("--config-dir", action="append", default=[],
                        metavar="DIR", help="directory of *.conf files")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {version()}")


def add_to_every_command(parser: argparse.ArgumentParser, *flags: str,
                         **kwargs: Any) -> None:
    """Add an option to ``parser`` and to every (sub)command below it, so
    it is accepted before or after the command name (``service list
    --json`` as well as ``--json service list``). Sub-commands default to
    SUPPRESS so they never reset a value given earlier on the line."""
    parser.add_argument(*flags, **kwargs)
    sub_kwargs = dict(kwargs, default=argparse.SUPPRESS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _add_below(sub, flags, sub_kwargs)


def _add_below(parser: argparse.ArgumentParser, flags: tuple[str, ...],
               kwargs: dict[str, Any]) -> None:
    parser.add_argument(*flags, **kwargs)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _add_below(sub, flags, kwargs)


def database_url(conf: cfg.ConfigOpts) -> sa.engine.URL:
    """``[database] connection`` as a URL whose dialect and driver load,
    and whose arguments (with ``connection_parameters``) SQLAlchemy takes.

    :raises ConfigError: the value is not a URL, names a dialect SQLAlchemy
        does not have or a driver that is not installed, or an argument
        SQLAlchemy cannot convert (:func:`errors.driver_refused`); naming the
        option, the file that sets it and the fix, never the password.
    """
    from scheduler import errors
    from scheduler.db.engine import engine_url

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
        from scheduler.service import health
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
    from scheduler import errors
    from scheduler.db import migration

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
    from oslo_db import exception as db_exc

    from scheduler import errors

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
    from scheduler.db import models

    writes: list[tuple[sa.Table, tuple[str, ...]]] = [
        (models.services, ("UPDATE", "INSERT")),
        (models.compute_nodes, ("UPDATE",)),
        (models.allocations, ("UPDATE", "INSERT", "DELETE")),
        (models.claim_groups, ("UPDATE", "INSERT")),
        (models.stacks, ("UPDATE", "INSERT", "DELETE")),
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


def conf_from_args(args: argparse.Namespace) -> cfg.ConfigOpts:
    """Load the configuration named by ``--config-file``/``--config-dir``.

    :raises cfg.Error: a file is missing, unreadable or malformed (see
        :mod:`scheduler.errors`).
    """
    argv = []
    for path in args.config_file:
        argv += ["--config-file", path]
    for path in args.config_dir:
        argv += ["--config-dir", path]
    return sched_conf.load(argv)


def setup_logging(conf: cfg.ConfigOpts, debug: bool, name: str) -> None:
    """oslo.log for a command: to stderr (stdout is the command's output)
    unless the configuration says otherwise; DEBUG with ``--debug``, else
    WARNING and up, without oslo.db's "exception wrapped" record."""
    import logging as pylogging

    conf.set_default("use_stderr", True)
    if debug:
        conf.set_override("debug", True)
    setup_log_output(conf, name)
    if not debug:
        pylogging.getLogger().setLevel(pylogging.WARNING)
        # The command's own line names that error; --debug shows it all.
        from scheduler.db import wrapped
        wrapped.install(drop=True)


def setup_log_output(conf: cfg.ConfigOpts, name: str) -> None:
    """``logging.setup(conf, name)`` (oslo.log), which opens the log file.

    :raises ConfigError: the file ``[DEFAULT] log_file``/``log_dir`` make
        cannot be opened (no such directory, permission denied),
        ``log_config_append`` cannot be loaded, ``default_log_levels``
        names an unknown level or ``use_journal`` has no systemd
        bindings; naming the option, not a bare OSError or ValueError.
    """
    try:
        logging.setup(conf, name)
        _check_log_formats(conf)
    except OSError as e:
        where = "[DEFAULT] " + ("log_file" if conf.log_file else "log_dir")
        raise exception.ConfigError(
            f"cannot open log file {e.filename} ({where}): {e.strerror}; "
            f"fix {where}, create its directory or run as a user that may "
            f"write there") from None
    except logging.LogConfigError as e:
        raise exception.ConfigError(
            f"[DEFAULT] log_config_append: {e}; fix the option or the "
            f"file") from None
    except ValueError as e:
        # logging's setLevel of a default_log_levels entry: "Unknown
        # level: 'LOUD'" ('' for an entry without '=LEVEL').
        if not str(e).startswith("Unknown level: "):
            raise
        raise exception.ConfigError(
            f"{_log_option(conf, 'default_log_levels')}: unknown log level "
            f"{str(e).partition(': ')[2]}; write each entry as "
            f"logger=LEVEL (DEBUG, INFO, WARNING, ERROR or CRITICAL)"
        ) from None
    except RuntimeError as e:
        if not (conf.use_journal and "Systemd" in str(e)):
            raise
        raise exception.ConfigError(
            f"{_log_option(conf, 'use_journal')}: the systemd Python "
            f"bindings are not installed ({e}); install them (python3-"
            f"systemd) or set use_journal = false") from None


def _check_log_formats(conf: cfg.ConfigOpts) -> None:
    """oslo.log's format strings can write a line, with a request and
    without: a key the record lacks (``%(nosuch)s``) or a malformed one
    made every log line a "--- Logging error ---" traceback instead.

    :raises ConfigError: naming the option, its file and the error.
    """
    import logging as pylogging

    from oslo_log import formatters

    formatter = next((h.formatter for h in pylogging.getLogger().handlers
                      if isinstance(h.formatter,
                                    formatters.ContextFormatter)), None)
    if formatter is None:
        return
    for option, extra in (("logging_default_format_string", {}),
                          ("logging_context_format_string",
                           {"request_id": "req-check"})):
        record = pylogging.LogRecord("scheduler", pylogging.INFO, __file__,
                                     0, "check", None, None)
        record.__dict__.update(extra)
        try:
            formatter.format(record)
        except (KeyError, ValueError, TypeError) as e:
            raise exception.ConfigError(
                f"{_log_option(conf, option)}: cannot write a log line "
                f"with it ({type(e).__name__}: {e}); fix the format "
                f"string") from None


def _log_option(conf: cfg.ConfigOpts, option: str) -> str:
    """``[DEFAULT] option``, and the file that sets it if one does."""
    location = conf.get_location(option)
    return f"[DEFAULT] {option}" + (
        f" in {location.detail}" if location and location.detail else "")


def format_table(rows: Sequence[Mapping[str, Any]],
                 columns: Sequence[str]) -> str:
    """A plain-text table: a header line, a dashes line, one line per row.

    Each cell is ``str(row[column])``; a missing key or ``None`` is an empty
    cell. Columns are left-aligned, two spaces apart, trailing blanks cut.
    """
    cells = [["" if r.get(c) is None else str(r[c]) for c in columns]
             for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells])
              for i, c in enumerate(columns)]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()

    return "\n".join([line(columns), line(["-" * w for w in widths])]
                     + [line(row) for row in cells])
