"""scheduler.errors: each operator error becomes one line with its fix."""
from __future__ import annotations

from oslo_config import cfg
from oslo_db import exception as db_exc
import oslo_messaging as messaging
import pytest
from sqlalchemy import exc as sa_exc

from scheduler import conf as sched_conf
from scheduler import errors
from scheduler import exception


@pytest.fixture
def conf():
    c = sched_conf.load([])
    c.set_override("connection", "postgresql://u:secret@db/sched",
                   group="database")
    return c


def _op(text):
    return sa_exc.OperationalError("UPDATE compute_nodes SET x=1", {},
                                   Exception(text))


def test_missing_table_is_no_schema(conf):
    e = db_exc.DBNonExistentTable(_op('relation "services" does not exist'))
    line = errors.describe(e, conf)
    assert line == ("no scheduler schema in postgresql://u:***@db/sched; "
                    "run 'scheduler-manage db sync' first")


def test_read_only_names_the_database_not_the_sql(conf):
    line = errors.describe(_op("attempt to write a readonly database"), conf)
    assert line.startswith("database postgresql://u:***@db/sched is "
                           "read-only for this user")
    assert "UPDATE" not in line and "secret" not in line


@pytest.mark.parametrize("statement, read", [
    ("SELECT alembic_version.version_num FROM alembic_version", True),
    ("SELECT id FROM compute_nodes WHERE id = 1 FOR UPDATE", False),
    ("UPDATE services SET id=id WHERE false", False)])
def test_postgresql_permission_denied_says_read_or_write(conf, statement,
                                                         read):
    """PostgreSQL words a refused read as a refused write; the statement
    tells them apart (a row lock needs UPDATE: a write)."""
    e = db_exc.DBError(sa_exc.ProgrammingError(
        statement, {}, Exception("permission denied for table t")))
    line = errors.describe(e, conf)
    assert line.startswith(
        "database postgresql://u:***@db/sched refused this user a read "
        "(permission denied for table t)" if read else
        "database postgresql://u:***@db/sched is read-only for this user"
    ), line


@pytest.mark.parametrize("text, refused", [
    ('permission denied for database "sched"', True),          # PostgreSQL
    ("(1044, \"Access denied for user 'u'@'%' to database 'sched'\")",
     True),
    ("(1045, \"Access denied for user 'u'@'h' (using password: YES)\")",
     False)])
def test_a_user_refused_the_database_is_told_to_grant_it(conf, text,
                                                         refused):
    line = errors.describe(db_exc.DBError(_op(text)), conf)
    assert line.startswith("database postgresql://u:***@db/sched refused "
                           "this user (") is refused, line
    assert "read-only" not in line


@pytest.mark.parametrize("text", [
    "canceling statement due to lock timeout",                # PostgreSQL
    "(1205, 'Lock wait timeout exceeded; try restarting transaction')",
    "database is locked"])                                    # SQLite
def test_a_lock_held_elsewhere_names_db_lock_timeout(conf, text):
    line = errors.describe(db_exc.DBError(_op(text)), conf)
    assert line == ("database postgresql://u:***@db/sched: a lock another "
                    "session holds outlasted [scheduler] db_lock_timeout "
                    "(30 s); end that session's open transaction")


def test_missing_database_is_not_a_missing_schema(conf):
    line = errors.describe(_op('database "sched" does not exist'), conf)
    assert line.startswith("cannot open database postgresql://u:***@db/")


@pytest.mark.parametrize("text", [
    "Connection reset by peer\n",
    "SSL SYSCALL error: EOF detected\n",
    'connection to server at "db", port 5432 failed: server closed the '
    'connection unexpectedly\n\tThis probably means the server terminated '
    'abnormally\n\tbefore or while processing the request.\n'])
def test_a_lost_connection_is_a_database_that_cannot_be_opened(conf, text):
    """Once db_outage_timeout is spent: the same line as a refused
    connection, and a restart may help (db.retry.LOST)."""
    line = errors.describe(_op(text), conf)
    assert line.startswith("cannot open database postgresql://u:***@db/"
                           "sched: ")
    assert line.endswith("; check [database] connection and that the "
                         "database server is up")
    assert errors.restart_may_help(_op(text))


def test_config_file_errors():
    line = errors.describe(cfg.ConfigFilesNotFoundError(["/x.conf"]))
    assert line.startswith("configuration file /x.conf not found; pass "
                           "--config-file")


@pytest.mark.parametrize("section, line", [
    ("filter_scheduler", "[filter_scheduler] host_subset_size"),
    ("DEFAULT", "[DEFAULT] host_subset_size")])
def test_a_value_that_does_not_read_names_group_option_and_file(
        tmp_path, section, line):
    path = tmp_path / "s.conf"
    path.write_text(f"[{section}]\nhost_subset_size = x\n")
    conf = sched_conf.new_conf()
    conf.register_opt(cfg.IntOpt("host_subset_size"))    # as in DEFAULT
    conf(["--config-file", str(path)], default_config_files=[])
    group = conf.filter_scheduler if section != "DEFAULT" else conf
    with pytest.raises(cfg.ConfigFileValueError) as raised:
        group.host_subset_size
    assert errors.describe(raised.value) == (
        f"{line} in {path}: invalid literal for int() with base 10: 'x'; "
        f"fix the value in the configuration file")


def test_run_prints_one_line_without_traceback(capsys):
    def body():
        raise RuntimeError("boom")
    assert errors.run(body) == 1
    assert capsys.readouterr().err == "ERROR: RuntimeError: boom\n"


def test_run_traceback_only_with_debug(capsys):
    def body():
        raise exception.InvalidRequest("spec: bad\nsecond line")
    assert errors.run(body, debug=True) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.splitlines()[-1] == "ERROR: spec: bad second line"


def test_run_passes_the_exit_status():
    assert errors.run(lambda: 3) == 3


@pytest.mark.parametrize("exc, may_help", [
    (errors.BrokerUnavailable("no broker answered"), True),
    (errors.BrokerRefused("refused the login"), False),
    (db_exc.DBConnectionError(_op("could not connect to server")), True),
    (_op("connection refused"), True),
    (_op('connection to server at "127.0.0.1", port 5432 failed: FATAL:  '
         'the database system is starting up\n'), True),
    (_op("FATAL:  the database system is shutting down"), True),
    (_op("FATAL:  sorry, too many clients already"), True),
    (_op("(1053, 'Server shutdown in progress')"), True),
    (db_exc.DBNonExistentTable(_op('relation "services" does not exist')),
     False),
    (_op("attempt to write a readonly database"), False),
    (exception.ConfigError("[filter_scheduler] enabled_filters: ..."),
     False),
    (RuntimeError("a bug"), False),
])
def test_restart_may_help_only_with_what_may_come_back(exc, may_help):
    assert errors.restart_may_help(exc) is may_help


def test_one_line_is_describes_line_or_the_first_line_of_the_error(conf):
    assert errors.one_line(PermissionError(13, "denied", "/x"), conf) == (
        errors.describe(PermissionError(13, "denied", "/x"), conf))
    # Not an operator's error: its type and first line, never a second.
    bug = sa_exc.ResourceClosedError("This result object is closed.\n"
                                     "(Background on this error at: x)")
    assert errors.one_line(bug, conf) == (
        "ResourceClosedError: This result object is closed.")


def test_broker_hosts_name_every_host_without_credentials():
    conf = sched_conf.load([])
    messaging.TransportURL.parse(conf)   # registers transport_url
    conf.set_override(
        "transport_url",
        "rabbit://us%40er:p%3Ass@h1:5673,us%40er:p%3Ass@h2/v%2Fh")
    assert errors.broker_hosts(conf) == "h1:5673, h2:5672"



@pytest.mark.parametrize("text, line", [
    # libpq, a URL listing primary and standby with
    # target_session_attrs=read-write, when only the standby answers.
    ('connection to server at "10.0.0.1", port 5432 failed: Connection '
     'refused\nconnection to server at "10.0.0.2", port 5432 failed: '
     'session is read-only',
     "no server of database postgresql://u:***@db/sched accepts writes: "
     "the primary is down or cut off and no standby has been promoted "
     "(yet)"),
    # A URL naming the standby itself.
    ("cannot execute INSERT in a read-only transaction",
     "database postgresql://u:***@db/sched accepts no writes (cannot "
     "execute INSERT in a read-only transaction): it is a standby; point "
     "[database] connection at the primary, or list primary and standbys "
     "with target_session_attrs=read-write")])
def test_a_standby_is_no_missing_grant(conf, text, line):
    assert errors.describe(db_exc.DBError(_op(text)), conf) == line
