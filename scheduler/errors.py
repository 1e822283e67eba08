"""The one place that turns an operator's mistake into one line.

Every console script runs its body through :func:`run`. An error the
operator can cause (a missing or unreadable config file, a database that
does not exist, has no schema or is read-only, an unreachable broker, a bad
value the server refused) becomes ``ERROR: <problem>; <fix>`` on stderr and
exit status 1. Anything else is a bug: one line too (``Type: text``), plus
the traceback with ``--debug``. A closed stdout (``| head``) ends the command quietly.
"""
from __future__ import annotations

import re

import os
import sys
import traceback
from typing import Callable

from oslo_config import cfg
from oslo_db import exception as db_exc
import oslo_messaging as messaging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import conf as sched_conf
from scheduler import exception
from scheduler.db import retry as db_retry

#: Text of driver errors that mean "the schema is not there".
_NO_SCHEMA = ("no such table", "does not exist", "doesn't exist",
              "undefinedtable")
#: ... "the database refuses writes from this user".
_READ_ONLY = ("readonly database", "read-only", "permission denied",
              "insufficientprivilege", "command denied")
#: ... "this user may not use the database at all": PostgreSQL's CONNECT
#: privilege, MariaDB's 1044 ("access denied for user 'u'@'%' to database
#: 'd'"; a wrong password's 1045 names no database).
_NO_ACCESS = ("permission denied for database", "' to database '")
#: The fix of a user refused a read or the database (not only a write).
_GRANT = ("read and write access to the scheduler's tables, or run as the "
          "user that owns them (e.g. sudo -u scheduler)")
#: ... a user who may write the tables but not use their id sequences.
_SEQUENCE_GRANT = ("USAGE on the sequences of the scheduler's tables (a grant "
                   "on a table is none on its sequence), or run as the user "
                   "that owns them (e.g. sudo -u scheduler)")
#: ... "the database server cannot be reached".
_UNREACHABLE = db_retry.UNREACHABLE
#: ... "the database file or server cannot be opened" (a server that did
#: not answer in time included: PyMySQL's "(timed out)"; and one that
#: dropped the connection, db_retry.LOST, the retry's own list).
_CANNOT_OPEN = ("unable to open database file", "no such file") + \
    _UNREACHABLE + db_retry.LOST + db_retry.UNANSWERED

#: ... "a lock another session holds outlasted [scheduler]
#: db_lock_timeout" (SQLite's busy timeout, MariaDB's 1205, PostgreSQL's
#: 55P03).
_LOCKED = db_retry.SQLITE_BUSY + ("lock wait timeout exceeded",
                                  "due to lock timeout")

#: ... "the database server is away or busy for now" (retried for
#: [scheduler] db_outage_timeout). Each passes by itself, so a worker that
#: meets one is started again.
_DB_AWAY = db_retry.AWAY

# Broker errors: kombu/amqp raise these while connecting.
try:
    from amqp import exceptions as amqp_exc
    _BROKER_AUTH: tuple[type[BaseException], ...] = (
        amqp_exc.AccessRefused,)
except ImportError:  # pragma: no cover - amqp is oslo.messaging's dep
    _BROKER_AUTH = ()


class CommandFailed(Exception):
    """A command's own one-line failure; the message says it all."""


class BrokerUnavailable(exception.SchedulerException):
    """No broker answered within the budget; a later try may succeed
    (:func:`scheduler.rpc.broker.check` raises it)."""


class BrokerRefused(BrokerUnavailable):
    """The broker answered and refused the credentials or virtual host, or
    the configuration cannot reach a RabbitMQ at all (another transport,
    a TLS file that cannot be read): no retry or restart can fix that,
    only the configuration."""


def database_option(conf: cfg.ConfigOpts, parameters: bool = False) -> str:
    """``[database] connection`` and the file that sets it, for messages;
    ``with connection_parameters`` too when ``parameters`` and they are
    set."""
    location = conf.get_location("connection", "database")
    where = "[database] connection"
    if parameters and conf.database.connection_parameters:
        where += " with connection_parameters"
    return where + (f" in {location.detail}" if location and location.detail
                    else "")


def driver_refused(conf: cfg.ConfigOpts, exc: BaseException
                   ) -> exception.ConfigError:
    """The error for arguments of the URL (its query, ``connection_
    parameters``) the driver refuses before any SQL: SQLAlchemy or the
    driver raise a bare ValueError or AttributeError naming no option."""
    driver = sa.engine.make_url(conf.database.connection).get_driver_name()
    return exception.ConfigError(
        f"{database_option(conf, parameters=True)}: the {driver} driver "
        f"refused them ({type(exc).__name__}: {exc}); fix the options")


def database_name(conf: cfg.ConfigOpts | None) -> str:
    """``[database] connection`` for messages: a SQLite file's path, else
    the URL without its password."""
    if conf is None:
        return "the database"
    try:
        url = sa.engine.make_url(conf.database.connection)
    except Exception:
        return "[database] connection"
    if url.get_backend_name() == "sqlite" and url.database:
        return url.database
    return url.render_as_string(hide_password=True)


def broker_hosts(conf: cfg.ConfigOpts) -> str:
    """The broker host(s) of ``[DEFAULT] transport_url``, for messages,
    without credentials."""
    try:
        url = messaging.TransportURL.parse(conf)
    except Exception:
        return "[DEFAULT] transport_url"
    hosts = ", ".join(f"{h.hostname}:{h.port or 5672}" for h in url.hosts)
    return hosts or "localhost:5672"


def _db_message(exc: BaseException) -> str:
    """The driver's error: its type's name, a blank, its text as the
    database server wrote it."""
    inner = getattr(exc, "inner_exception", None) or exc
    return f"{type(getattr(inner, 'orig', inner)).__name__} " \
           f"{getattr(inner, 'orig', inner)}"


def _db_text(exc: BaseException) -> str:
    """:func:`_db_message` lower-cased, to match against."""
    return _db_message(exc).lower()


def _refused_read(exc: BaseException, text: str) -> bool:
    """Whether the permission error ``exc`` (its :func:`_db_text`
    ``text``) refused a read, not a write. MariaDB names the command;
    PostgreSQL says "permission denied" for either, so the statement tells
    (a SELECT ... FOR UPDATE or FOR SHARE also needs UPDATE: a write)."""
    if "select command denied" in text:
        return True
    inner = getattr(exc, "inner_exception", None) or exc
    statement = " ".join(
        (getattr(inner, "statement", None) or "").upper().split())
    return statement.startswith("SELECT ") and not any(
        lock in statement for lock in (" FOR UPDATE", " FOR SHARE",
                                       " FOR NO KEY UPDATE", " FOR KEY SHARE"))


def refused_write(exc: BaseException, conf: cfg.ConfigOpts | None,
                  what: str, sequence: bool = False) -> str | None:
    """The line for a write ``what`` (``INSERT on table stacks``) the
    database refused this user, who may do others (so not
    :func:`describe`'s "read-only"); None when ``exc`` is no refusal.
    ``sequence``: ``what`` is a use of a table's id sequence, which a
    grant on the table does not give (PostgreSQL's USAGE)."""
    if not any(t in _db_text(exc) for t in _READ_ONLY):
        return None
    grant = _SEQUENCE_GRANT if sequence else _GRANT
    return (f"database {database_name(conf)} refused this user {what}; "
            f"grant it {grant}")


def one_line(exc: BaseException, conf: cfg.ConfigOpts | None = None
             ) -> str:
    """:func:`describe`'s line for ``exc``, else its type and the first
    line of its text (a driver's text spans lines: PostgreSQL's hint,
    SQLAlchemy's "Background on this error"), for a log line that goes
    on serving rather than one that shows a traceback."""
    line = describe(exc, conf)
    if line is not None:
        return line
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:300]}"


def describe(exc: BaseException, conf: cfg.ConfigOpts | None = None
             ) -> str | None:
    """One line naming the problem and its fix for an operator error, or
    None when ``exc`` is not one (a bug: the caller shows the traceback).

    :param conf: the loaded configuration, if it got that far; it lets the
        line name the database or broker concerned.
    """
    if isinstance(exc, exception.SchedulerException):
        return exc.message
    if isinstance(exc, CommandFailed):
        return str(exc)
    if isinstance(exc, cfg.ConfigFilesNotFoundError):
        return (f"configuration file {', '.join(exc.config_files)} not "
                f"found; pass --config-file with the path of an existing "
                f"file (etc/scheduler/scheduler.conf.sample is a template)")
    if isinstance(exc, cfg.ConfigFilesPermissionDeniedError):
        return (f"cannot read configuration file "
                f"{', '.join(exc.config_files)} (permission denied); run "
                f"as a user that may read it, e.g. sudo -u scheduler")
    if isinstance(exc, cfg.ConfigDirNotFoundError):
        return (f"configuration directory {exc.config_dir} not found; "
                f"create it or drop --config-dir")
    if isinstance(exc, cfg.ConfigFileParseError):
        return (f"cannot parse configuration file {exc.config_file}: "
                f"{exc.msg}; fix the file")
    if isinstance(exc, cfg.ConfigFileValueError):
        return _bad_value(str(exc))
    if isinstance(exc, cfg.Error):
        return str(exc)
    if isinstance(exc, (db_exc.DBError, sa_exc.DBAPIError,
                        sa_exc.OperationalError)):
        return _describe_db(exc, conf)
    if isinstance(exc, messaging.InvalidTransportURL):
        return (f"{_transport_option(exc, conf)}: not a transport URL "
                f"({exc}); write it as rabbit://user:password@host:5672/")
    if isinstance(exc, messaging.MessagingTimeout):
        return ("no reply within the RPC timeout; is a scheduler-server "
                "running on the same transport_url and topic?")
    if isinstance(exc, messaging.MessageDeliveryFailure) or (
            _BROKER_AUTH and isinstance(exc, _BROKER_AUTH)):
        where = broker_hosts(conf) if conf else "transport_url"
        return (f"cannot reach the message broker at {where}: {exc}; "
                f"check [DEFAULT] transport_url (host, port, user, "
                f"password) and that RabbitMQ is running")
    if isinstance(exc, messaging.RemoteError):
        return f"the scheduler failed: {exc.exc_type}: {exc.value}"
    if isinstance(exc, PermissionError):
        return (f"permission denied: {exc.filename}; run as a user that "
                f"may use it")
    return None


def _transport_option(exc: BaseException,
                      conf: cfg.ConfigOpts | None) -> str:
    """The option that holds the URL ``exc`` refused: the notifications'
    own when that is the one, else the RPC one. The URL itself is not
    shown: it may hold a password."""
    try:
        notifications = conf.oslo_messaging_notifications.transport_url
    except (AttributeError, cfg.NoSuchOptError):   # no conf, or not built
        notifications = None
    if notifications and notifications == getattr(exc, "url", None):
        return "[oslo_messaging_notifications] transport_url"
    return "[DEFAULT] transport_url"


def restart_may_help(exc: BaseException) -> bool:
    """Could starting again fix what ``exc`` says went wrong? Only for a
    broker or database that did not answer (it may come back); never for a
    refused login, a missing schema, a plugin that fails or a bug: a
    server restarting its workers for ever over those only hides them."""
    if isinstance(exc, BrokerRefused) or (
            _BROKER_AUTH and isinstance(exc, _BROKER_AUTH)):
        return False
    if isinstance(exc, (BrokerUnavailable,
                        messaging.MessageDeliveryFailure,
                        db_exc.DBConnectionError, ConnectionError)):
        return True
    if isinstance(exc, (db_exc.DBError, sa_exc.DBAPIError)):
        text = _db_text(exc)
        return not any(t in text for t in _NO_SCHEMA + _READ_ONLY) and any(
            t in text for t in _DB_AWAY)
    return False


def _describe_db(exc: BaseException, conf: cfg.ConfigOpts | None) -> str:
    name = database_name(conf)
    text = _db_text(exc)
    # Whitespace collapsed: PostgreSQL's messages span lines (and end in a
    # newline), and this line goes into logs, STATUS= and /healthcheck.
    # In the server's own case: the names it quotes (a database, a user,
    # a table) are case-sensitive.
    detail = " ".join(_db_message(exc).split(" ", 1)[-1].split())[:300]
    # PostgreSQL says 'database "x" does not exist' for a missing database
    # and 'relation "x" does not exist' for a missing table.
    missing_database = 'database "' in text and "does not exist" in text
    if not missing_database and (
            isinstance(exc, db_exc.DBNonExistentTable)
            or any(t in text for t in _NO_SCHEMA)):
        return (f"no scheduler schema in {name}; run 'scheduler-manage db "
                f"sync' first")
    if "trigger command denied" in text or "super privilege" in text:
        # MySQL/MariaDB: 'db sync' may write but not make the
        # change-tracking triggers (migration 0003).
        return (f"database {name} refused to create triggers: {detail}; "
                f"grant this user the TRIGGER privilege (with the binary "
                f"log on, also SUPER or set log_bin_trust_function_creators"
                f"=1), then run 'scheduler-manage db sync' again")
    # libpq's target_session_attrs=read-write found no primary; a standby.
    # No grant fixes either.
    if "session is read-only" in text:
        return (f"no server of database {name} accepts writes: the primary "
                f"is down or cut off and no standby has been promoted "
                f"(yet)")
    if "read-only transaction" in text:
        return (f"database {name} accepts no writes ({detail}): it is a "
                f"standby; point [database] connection at the primary, or "
                f"list primary and standbys with target_session_attrs="
                f"read-write")
    # Not "read-only" for these two: granting write access would not be
    # enough.
    if any(t in text for t in _NO_ACCESS):
        return (f"database {name} refused this user ({detail}); grant it "
                f"access to the database and {_GRANT}")
    if any(t in text for t in _READ_ONLY):
        if _refused_read(exc, text):
            return (f"database {name} refused this user a read ({detail}); "
                    f"grant it {_GRANT}")
        return (f"database {name} is read-only for this user; run as the "
                f"user that owns it (e.g. sudo -u scheduler) or grant "
                f"write access")
    if any(t in text for t in _LOCKED):
        timeout = "" if conf is None else \
            f" ({conf.scheduler.db_lock_timeout} s)"
        return (f"database {name}: a lock another session holds outlasted "
                f"[scheduler] db_lock_timeout{timeout}; end that session's "
                f"open transaction")
    if missing_database or isinstance(exc, db_exc.DBConnectionError) or any(
            t in text for t in _CANNOT_OPEN):
        return (f"cannot open database {name}: {detail}; check [database] "
                f"connection and that the database server is up")
    return f"database {name} failed: {detail}; check [database] connection"


def run(body: Callable[[], int], debug: bool = False,
        conf: Callable[[], cfg.ConfigOpts | None] = lambda: None) -> int:
    """Run a command's ``body``; map what it raises to one line and exit
    status 1 (130 on Ctrl-C).

    :param debug: print the traceback of unexpected errors too.
    :param conf: returns the configuration once loaded (None before), so
        the line can name the database or broker.
    """
    try:
        code = body()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _broken_pipe()
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        message = describe(e, conf())
        if debug:
            traceback.print_exc()
        if message is None:
            message = f"{type(e).__name__}: {e}"
        return error(message)


def error(message: str) -> int:
    """Print ``ERROR: message`` on stderr (one line); returns 1."""
    try:
        print(f"ERROR: {' '.join(message.split())}", file=sys.stderr)
    except BrokenPipeError:
        pass
    return 1


def _broken_pipe() -> int:
    # The reader went away (| head): nothing more to say. Point stdout at
    # /dev/null so the interpreter's final flush does not raise again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 1


#: oslo.config's text for a value that does not read: the option's name
#: (not its group) and a LocationInfo repr around the file.
_BAD_VALUE = re.compile(r"Value for option (?P<option>\S+) from "
                        r"LocationInfo\(.*?detail='(?P<file>[^']*)'\) is "
                        r"not valid: (?P<why>.*)", re.S)


def _bad_value(text: str) -> str:
    """``[group] option in FILE: why; fix ...`` from oslo.config's
    ConfigFileValueError text, which names the option without its group
    and the file inside a LocationInfo repr. The group is the section of
    the file that sets the option (when one does)."""
    match = _BAD_VALUE.fullmatch(text)
    if match is None:
        return f"{text}; fix the value in the configuration file"
    option, path = match["option"], match["file"]
    sections = sched_conf.sections_setting(path, option)
    where = f"[{sections[0]}] {option}" if len(sections) == 1 else option
    return (f"{where} in {path}: {match['why']}; fix the value in the "
            f"configuration file")
