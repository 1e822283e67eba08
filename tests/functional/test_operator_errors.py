"""Every operator mistake ends in one line naming the problem and the
fix, exit status 1: real commands, real files, a real broker and
database."""
from __future__ import annotations

import functools
import importlib.util
import json
import os
from pathlib import Path
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from tests.fixtures import other_user
from tests.fixtures.config import write_config
from tests.functional.conftest import every_database
from tests.functional.conftest import register_fleet
from tests.functional.conftest import sync_schema

COMMANDS = ("server", "manage", "client", "fleet")
#: Arguments that make each command do real work once configured.
WORK = {"server": (), "manage": ("service", "list"), "client": ("ping",),
        "fleet": ("--nodes", "1", "--once")}


def run(command: str, *args: str, python: str = sys.executable,
        prefix: tuple[str, ...] = (),
        timeout: float = 60) -> subprocess.CompletedProcess:
    argv = [*prefix, python, "-m", f"scheduler.cmd.{command}", *args]
    return subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout, cwd="/")


@pytest.fixture(scope="session")
def as_nobody():
    """``as_nobody(command, *args)``: :func:`run` as user ``nobody``, from
    a copy of the project it may read wherever the checkout is. (Not in
    pytest's tmp_path: its base directory is 0700.)"""
    base = Path(tempfile.mkdtemp(prefix="sched-nobody-"))
    try:
        python = str(other_user.python_for("nobody", base))
        prefix = tuple(other_user.as_user("nobody"))
        yield functools.partial(run, python=python, prefix=prefix)
    finally:
        shutil.rmtree(base)


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """The single ERROR line; fails on anything else (a traceback, a
    second line, a zero exit)."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def shared_dir():
    """A directory user nobody may enter (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="sched-ops-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def sqlite_config(shared_dir, rabbitmq):
    def make(db: Path | None = None, **extra) -> Path:
        return write_config(shared_dir, {
            "state_path": shared_dir,
            "transport_url": rabbitmq.transport_url,
            "scheduler.topic": f"ops-{os.getpid()}-{time.monotonic_ns()}",
            "database.connection": f"sqlite:///{db or shared_dir / 'db.sqlite'}",
            **extra})
    return make


@pytest.mark.parametrize("command", COMMANDS)
def test_missing_config_file_names_it(command, tmp_path):
    missing = tmp_path / "nope.conf"
    line = one_line_error(run(command, "--config-file", str(missing),
                              *WORK[command]))
    assert line == (f"ERROR: configuration file {missing} not found; pass "
                    f"--config-file with the path of an existing file "
                    f"(etc/scheduler/scheduler.conf.sample is a template)")


@pytest.mark.parametrize("command", ("manage", "server", "fleet"))
def test_no_config_file_at_all_names_the_default_database(command):
    line = one_line_error(run(command, *WORK[command]))
    assert "/var/lib/scheduler/scheduler.sqlite does not exist" in line
    assert "no --config-file given" in line


def test_unreadable_config_file(as_nobody, sqlite_config):
    config = sqlite_config()
    config.chmod(0o600)
    line = one_line_error(as_nobody("manage", "--config-file", str(config),
                                    "service", "list"))
    assert line == (f"ERROR: cannot read configuration file {config} "
                    f"(permission denied); run as a user that may read it, "
                    f"e.g. sudo -u scheduler")


@pytest.mark.parametrize("command", COMMANDS)
def test_version_everywhere(command):
    result = run(command, "--version")
    assert result.returncode == 0
    assert result.stdout.strip().split()[-1][0].isdigit()


def test_missing_database_file_is_named_and_not_created(sqlite_config,
                                                        shared_dir):
    db = shared_dir / "absent.sqlite"
    config = sqlite_config(db)
    for args in (("db", "version"), ("service", "list")):
        line = one_line_error(run("manage", "--config-file", str(config),
                                  *args))
        assert line == (f"ERROR: database file {db} does not exist; run "
                        f"'scheduler-manage db sync' to create it, or "
                        f"point [database] connection at the right file")
    assert not db.exists()
    gone = shared_dir / "no" / "such" / "dir" / "x.sqlite"
    line = one_line_error(run("manage", "--config-file",
                              str(sqlite_config(gone)), "db", "sync"))
    assert line == (f"ERROR: cannot create database file {gone}: "
                    f"directory {gone.parent} does not exist; create it or "
                    f"fix [database] connection")


def test_empty_database_without_schema(sqlite_config, shared_dir):
    db = shared_dir / "empty.sqlite"
    sqlite3.connect(db).close()
    config = str(sqlite_config(db))
    for command in ("manage", "fleet", "server"):
        line = one_line_error(run(command, "--config-file", config,
                                  *WORK[command]))
        assert line == (f"ERROR: no scheduler schema in {db}; run "
                        f"'scheduler-manage db sync' first")
    # db version exits 1, so the unit's ExecStartPre check fails.
    result = run("manage", "--config-file", config, "db", "version")
    assert (result.returncode, result.stdout) == (
        1, "none (run 'scheduler-manage db sync')\n")


def test_a_schema_behind_head_is_named_with_both_revisions(sqlite_config,
                                                          shared_dir):
    """An upgrade whose 'db sync' was forgotten: every command that needs
    the schema refuses in one line, and so does the unit's pre-start
    check, before the service meets a missing column."""
    from scheduler import conf as sched_conf
    from scheduler.db.engine import create_engine
    from scheduler.db import migration

    db = shared_dir / "behind.sqlite"
    config = str(sqlite_config(db))
    engine = create_engine(sched_conf.load(["--config-file", config]))
    # A revision behind head (the chain is 0004 -> 0006 -> 0005 -> 0007
    # -> 0008 -> 0009 -> 0010 -> 0011 -> 0012 -> 0013).
    migration.upgrade(engine, "0005")
    engine.dispose()
    expected = (f"ERROR: schema in {db} is at revision 0005, head is "
                f"{migration.head()}; run 'scheduler-manage db sync'")
    for command in ("manage", "fleet", "server"):
        assert one_line_error(run(command, "--config-file", config,
                                  *WORK[command])) == expected
    result = run("manage", "--config-file", config, "db", "version")
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "0005\n", expected + "\n")
    sync_schema(config)
    assert run("manage", "--config-file", config, "db", "version"
               ).returncode == 0


@every_database
def test_no_schema_on_every_database(make_deployment):
    deployment = make_deployment(sync_schema=False)
    line = one_line_error(deployment.manage("service", "list", check=False))
    assert "no scheduler schema in " in line and "db sync" in line
    assert "password" not in line


def test_read_only_database(as_nobody, sqlite_config, shared_dir):
    config = str(sqlite_config())
    sync_schema(config)
    register_fleet(config, 2)
    line = one_line_error(as_nobody("manage", "--config-file", config,
                                    "service", "disable", "compute-00001"))
    assert line == (f"ERROR: database {shared_dir / 'db.sqlite'} is "
                    f"read-only for this user; run as the user that owns "
                    f"it (e.g. sudo -u scheduler) or grant write access")


def test_broken_pipe_is_quiet(sqlite_config):
    config = str(sqlite_config())
    sync_schema(config)
    register_fleet(config, 3000)
    result = subprocess.run(
        f"{sys.executable} -m scheduler.cmd.manage --config-file {config} "
        f"node list | head -1", shell=True, capture_output=True, text=True,
        timeout=120)
    assert result.stdout.startswith("host")
    assert result.stderr == ""


def test_json_after_the_command_and_everywhere(sqlite_config):
    import json
    config = str(sqlite_config())
    sync_schema(config)
    register_fleet(config, 2)
    for args in (("service", "list", "--json"), ("--json", "service", "list"),
                 ("db", "version", "--json"), ("allocations", "audit",
                                               "--json")):
        result = run("manage", "--config-file", config, *args)
        assert result.returncode == 0, result.stderr
        json.loads(result.stdout)
    assert json.loads(run("manage", "--config-file", config, "db", "version",
                          "--json").stdout)["revision"]
    assert json.loads(run("manage", "--config-file", config, "allocations",
                          "audit", "--json").stdout)["problems"] == []


def test_client_with_a_dead_broker_returns_within_its_timeout(shared_dir):
    config = write_config(shared_dir, {
        "state_path": shared_dir,
        "transport_url": f"rabbit://u:p@127.0.0.1:{free_port()}/"})
    started = time.monotonic()
    line = one_line_error(run("client", "--config-file", str(config),
                              "--timeout", "3", "ping"))
    elapsed = time.monotonic() - started
    assert "cannot reach the message broker at 127.0.0.1:" in line
    assert "within 3s" in line and "transport_url" in line
    # Interpreter start plus the 3 s budget; the old client never returned.
    assert elapsed < 30


def test_client_with_wrong_broker_password(shared_dir, rabbitmq):
    config = write_config(shared_dir, {
        "state_path": shared_dir,
        "transport_url": f"rabbit://nosuchuser:wrong@127.0.0.1:"
                         f"{rabbitmq.port}/"})
    line = one_line_error(run("client", "--config-file", str(config),
                              "--timeout", "5", "ping"))
    assert "refused the login" in line and "transport_url" in line


def test_server_side_refusals_are_one_line(make_deployment):
    deployment = make_deployment()
    deployment.fleet(3)
    deployment.start_server()
    line = one_line_error(deployment.client("release", "not-a-uuid"))
    assert line == "ERROR: consumer_uuids: 'not-a-uuid' is not a UUID"
    line = one_line_error(deployment.client("select", "--force-host",
                                            "nosuchhost"))
    assert line == ("ERROR: No valid host: 0/3 hosts passed. force_hosts "
                    "removed 3 (not a forced host; no compute host is "
                    "named nosuchhost)")


def test_fleet_reports_progress_on_long_work(sqlite_config):
    config = str(sqlite_config())
    sync_schema(config)
    # stderr is a pipe here: progress is shown only when forced (git's
    # convention, scheduler.progress).
    result = run("fleet", "--config-file", config, "--nodes", "40000",
                 "--once", "--progress", timeout=300)
    assert result.returncode == 0, result.stderr
    assert "fleet: registering new nodes 0/40000 (0%)" in result.stderr
    assert "fleet: registering new nodes 40000/40000 (100%)" in result.stderr


def test_server_with_a_dead_broker_exits_in_one_line(sqlite_config,
                                                      shared_dir):
    config = sqlite_config(**{
        "transport_url": f"rabbit://u:p@127.0.0.1:{free_port()}/",
        "scheduler.broker_startup_timeout": 3})
    sync_schema(config)
    line = one_line_error(run("server", "--config-file", str(config)))
    assert line.startswith("ERROR: cannot reach the message broker at "
                           "127.0.0.1:")
    assert "within 3s" in line and "start RabbitMQ or fix [DEFAULT] " \
        "transport_url" in line


def test_server_with_a_wrong_broker_password_exits_in_one_line(
        sqlite_config, rabbitmq):
    config = sqlite_config(**{
        "transport_url": f"rabbit://nosuchuser:wrong@127.0.0.1:"
                         f"{rabbitmq.port}/"})
    sync_schema(config)
    line = one_line_error(run("server", "--config-file", str(config)))
    assert f"the message broker at 127.0.0.1:{rabbitmq.port} refused the " \
        "login" in line
    assert "fix the user, password or virtual host in [DEFAULT] " \
        "transport_url" in line


def test_client_json_after_the_command(make_deployment):
    import json
    deployment = make_deployment()
    deployment.start_server()
    for args in (("ping", "--json"), ("--json", "ping")):
        result = deployment.client(*args)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["host"] == deployment.conf.host


def test_server_on_a_read_only_database_exits_in_one_line(as_nobody,
                                                         sqlite_config,
                                                         shared_dir):
    """The server's user may read the database file but not write it: the
    server refuses to start, naming the file, no SQL."""
    config = str(sqlite_config())
    sync_schema(config)
    register_fleet(config, 2)
    line = one_line_error(as_nobody("server", "--config-file", config))
    assert line == (f"ERROR: database {shared_dir / 'db.sqlite'} is "
                    f"read-only for this user; run as the user that owns "
                    f"it (e.g. sudo -u scheduler) or grant write access")


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never says a word (a hung
    database server, a firewall that swallows packets after the SYN)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield listener.getsockname()[1]
    listener.close()


@pytest.mark.parametrize("scheme", ["mysql+pymysql", "postgresql+psycopg2"])
@pytest.mark.parametrize("command", [("manage", "db", "version"),
                                     ("server",)])
def test_a_database_that_never_answers_is_one_line_not_a_hang(
        sqlite_config, silent_server, scheme, command):
    config = sqlite_config(**{
        "database.connection": f"{scheme}://u:p@127.0.0.1:{silent_server}/db"})
    line = one_line_error(run(command[0], "--config-file", str(config),
                              *command[1:], timeout=60))
    assert f"127.0.0.1:{silent_server}" in line, line
    assert "[database] connection" in line, line


def test_a_bad_option_value_is_named_before_any_worker_starts(
        sqlite_config):
    config = sqlite_config(**{"DEFAULT.report_interval": "x"})
    sync_schema(config)
    result = run("server", "--config-file", str(config))
    line = one_line_error(result)
    assert line.startswith(f"ERROR: [DEFAULT] report_interval in {config}: "
                           f"invalid literal for int()"), line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_file_that_is_not_utf8_is_named(command, sqlite_config):
    config = sqlite_config()
    with open(config, "ab") as f:
        f.write("# café\n".encode("latin-1"))
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line.startswith(f"ERROR: cannot parse configuration file "
                           f"{config}: not a UTF-8 text file"), line


def test_status_names_a_config_file_that_is_not_utf8(sqlite_config):
    config = sqlite_config()
    with open(config, "ab") as f:
        f.write("# café\n".encode("latin-1"))
    result = subprocess.run(
        [sys.executable, "-m", "scheduler.cmd.status", "--config-file",
         str(config), "upgrade", "check"], capture_output=True, text=True,
        timeout=60, cwd="/")
    assert result.returncode == 255, result.stderr
    assert result.stderr.splitlines() == [
        f"ERROR: cannot parse configuration file {config}: not a UTF-8 "
        f"text file ('utf-8' codec can't decode byte 0xe9 in position "
        f"{config.read_bytes().index(b'caf') + 3}: invalid continuation "
        f"byte); fix the file"], result.stderr


@pytest.mark.parametrize("option, command", [
    ("upgrade_levels.scheduler", "client"), ("scheduler.topic", "server")])
def test_values_that_are_not_a_version_or_a_topic_are_named(
        sqlite_config, option, command):
    config = sqlite_config(**{option: "not a version"})
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert option.split(".")[1] in line, line


#: ``[database] connection`` values no engine can be made of: not a URL,
#: a dialect SQLAlchemy does not have, a driver that is not installed.
BAD_URLS = {"not a URL": "not-a-url",
            "unknown dialect": "nosuchdb://u:secret@127.0.0.1/x",
            "driver not installed": "mssql+pymssql://u:secret@127.0.0.1/x"}


@pytest.mark.parametrize("command", ("manage", "server", "fleet"))
@pytest.mark.parametrize("url", list(BAD_URLS.values()), ids=list(BAD_URLS))
def test_a_database_url_no_engine_can_use_is_named(sqlite_config, command,
                                                     url):
    config = sqlite_config(**{"database.connection": url})
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line.startswith(f"ERROR: [database] connection in {config}: "), \
        line
    assert "secret" not in line, line


def _failed_status_checks(config) -> dict[str, dict]:
    """``scheduler-status upgrade check --json`` on ``config``, which must
    fail (exit 2) without a traceback: its checks by name."""
    result = subprocess.run(
        [sys.executable, "-m", "scheduler.cmd.status", "--config-file",
         str(config), "--broker-timeout", "5", "upgrade", "check",
         "--json"], capture_output=True, text=True, timeout=60, cwd="/")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)
    return {c["check"]: c for c in json.loads(result.stdout)["checks"]}


@pytest.mark.parametrize("url", list(BAD_URLS.values()), ids=list(BAD_URLS))
def test_status_fails_the_database_check_on_a_url_no_engine_can_use(
        sqlite_config, url):
    config = sqlite_config(**{"database.connection": url})
    checks = _failed_status_checks(config)
    assert checks["Database"]["details"].startswith(
        f"[database] connection in {config}: "), checks


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_value_of_a_command_line_option_in_the_file_is_named(
        sqlite_config, command):
    # oslo.log's options (debug, use_syslog...) are command-line options
    # too; oslo.config checks their values apart from the others.
    config = sqlite_config(**{"DEFAULT.debug": "maybe"})
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line.startswith(f"ERROR: [DEFAULT] debug in {config}: invalid "
                           f"Boolean value 'maybe'"), line


@pytest.mark.parametrize("args, named", [
    (("--config-file", "{config}"), "[DEFAULT] debug in {config}"),
    (("--config-file", "{config}", "--broker-timeout", "0"),
     "--broker-timeout on the command line")])
def test_status_exits_255_not_1_on_a_bad_option_value(sqlite_config, args,
                                                      named):
    # 1 is oslo.upgradecheck's "warning": a deployment tool would go on.
    config = sqlite_config(**({"DEFAULT.debug": "maybe"}
                              if "{config}" in named else {}))
    result = subprocess.run(
        [sys.executable, "-m", "scheduler.cmd.status",
         *(a.format(config=config) for a in args), "upgrade", "check"],
        capture_output=True, text=True, timeout=60, cwd="/")
    assert result.returncode == 255, (result.returncode, result.stderr)
    [line] = result.stderr.splitlines()
    assert line.startswith(f"ERROR: {named.format(config=config)}: "
                           f"invalid "), line


@pytest.mark.parametrize("command", ("server", "client"))
def test_a_transport_url_that_is_not_a_url_is_named(sqlite_config, command):
    config = sqlite_config(transport_url="broker.example.org")
    sync_schema(config)
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line.startswith("ERROR: [DEFAULT] transport_url: "), line


def test_status_fails_the_broker_check_on_a_transport_url_that_is_not_a_url(
        sqlite_config):
    config = sqlite_config(transport_url="broker.example.org")
    checks = _failed_status_checks(config)
    assert checks["Message broker"]["details"].startswith(
        "[DEFAULT] transport_url: "), checks


@pytest.mark.parametrize("scheme", ["kafka", "amqp", "nosuch"])
@pytest.mark.parametrize("command", ("server", "client"))
def test_a_transport_url_that_is_not_rabbitmq_is_named(sqlite_config,
                                                       rabbitmq, command,
                                                       scheme):
    # The broker at that address is a real RabbitMQ with these
    # credentials: only the scheme is wrong. oslo.messaging would fail
    # loading its driver (a missing confluent_kafka, a stevedore warning
    # plus DriverLoadFailure).
    url = rabbitmq.transport_url.replace("rabbit://", f"{scheme}://", 1)
    password = url.split("@")[0].rsplit(":", 1)[1]
    config = sqlite_config(transport_url=url)
    sync_schema(config)
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line.startswith(f"ERROR: [DEFAULT] transport_url: {scheme}:// "
                           f"is not a RabbitMQ URL"), line
    assert "rabbit://" in line and password not in line, line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_file_that_is_a_directory_is_named(command, sqlite_config,
                                                    shared_dir):
    config = sqlite_config()
    directory = shared_dir / "scheduler.conf.d"
    directory.mkdir()
    line = one_line_error(run(command, "--config-file", str(config),
                              "--config-file", str(directory),
                              *WORK[command]))
    assert line == (f"ERROR: configuration file {directory} is a directory; "
                    f"pass a file to --config-file (or the directory to "
                    f"--config-dir)"), line


def test_status_names_a_config_file_that_is_a_directory(shared_dir):
    result = subprocess.run(
        [sys.executable, "-m", "scheduler.cmd.status", "--config-file",
         str(shared_dir), "upgrade", "check"], capture_output=True,
        text=True, timeout=60, cwd="/")
    assert result.returncode == 255, result.stderr
    assert result.stderr.splitlines() == [
        f"ERROR: configuration file {shared_dir} is a directory; pass a "
        f"file to --config-file (or the directory to --config-dir)"], \
        result.stderr


@pytest.mark.parametrize("option, name", [
    ("log_file", "scheduler.log"), ("log_dir", None)])
@pytest.mark.parametrize("command", ("server", "manage", "client", "status"))
def test_a_log_file_that_cannot_be_opened_is_named(sqlite_config, shared_dir,
                                                   command, option, name):
    # oslo.log opens it while the command starts; a bare FileNotFoundError
    # named no option (and scheduler-status printed a traceback).
    missing = shared_dir / "no-such-dir"
    config = sqlite_config(**{option: missing / name if name else missing})
    args = (("upgrade", "check") if command == "status"
            else WORK[command])
    result = subprocess.run(
        [sys.executable, "-m", f"scheduler.cmd.{command}", "--config-file",
         str(config), *args], capture_output=True, text=True, timeout=60,
        cwd="/")
    assert result.returncode == (255 if command == "status" else 1), \
        result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"ERROR: cannot open log file {missing}/"), line
    assert line.endswith(f" ([DEFAULT] {option}): No such file or "
                         f"directory; fix [DEFAULT] {option}, create its "
                         f"directory or run as a user that may write "
                         f"there"), line


@pytest.mark.parametrize("option", ["ssl_ca_file", "ssl_cert_file",
                                    "ssl_key_file"])
@pytest.mark.parametrize("command", ("server", "client"))
def test_a_missing_broker_tls_file_is_named(sqlite_config, shared_dir,
                                            command, option):
    # kombu raised FileNotFoundError on every attempt; the line blamed an
    # unreachable RabbitMQ after the whole budget and named no file.
    missing = shared_dir / "no-such.pem"
    config = sqlite_config(**{"oslo_messaging_rabbit.ssl": "true",
                              f"oslo_messaging_rabbit.{option}": missing,
                              "scheduler.broker_startup_timeout": 20})
    sync_schema(config)
    started = time.monotonic()
    line = one_line_error(run(command, "--config-file", str(config),
                              *(("--timeout", "20") if command == "client"
                                else ()), *WORK[command]))
    assert line == (f"ERROR: [oslo_messaging_rabbit] {option} {missing}: "
                    f"No such file or directory; fix the option or the "
                    f"file"), line
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("scheme, why", [
    ("amqp", "No 'oslo.messaging.drivers' driver found, looking for 'amqp'"),
    ("kafka", "No module named 'confluent_kafka'")])
def test_a_notification_transport_whose_driver_does_not_load_is_named(
        sqlite_config, scheme, why):
    # Notifications may go to another broker than RPC; a driver that does
    # not load was a bare DriverLoadFailure or ModuleNotFoundError.
    config = sqlite_config(**{
        "oslo_messaging_notifications.driver": "messagingv2",
        "oslo_messaging_notifications.transport_url":
            f"{scheme}://u:secret@127.0.0.1:9092/"})
    sync_schema(config)
    line = one_line_error(run("server", "--config-file", str(config)))
    assert line == (f"ERROR: [oslo_messaging_notifications] transport_url: "
                    f"cannot load the {scheme} transport driver ({why}); "
                    f"use rabbit:// or install the driver's library"), line


@pytest.mark.parametrize("option, value, why", [
    ("heartbeat_timeout_threshold", "-1", "must be between 0 and 65535"),
    ("heartbeat_rate", "0", "must be at least 1"),
    ("rabbit_qos_prefetch_count", "70000", "must be between 0 and 65535")])
@pytest.mark.parametrize("command", ("server", "client"))
def test_a_broker_option_the_connection_cannot_use_is_named(
        sqlite_config, command, option, value, why):
    # oslo.messaging declares them without bounds; the values failed deep
    # in amqp or oslo.messaging as "error: argument out of range" or
    # "ZeroDivisionError: float division by zero", naming no option.
    config = sqlite_config(**{f"oslo_messaging_rabbit.{option}": value})
    sync_schema(config)
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line == (f"ERROR: [oslo_messaging_rabbit] {option} = {value} in "
                    f"{config}: {why}; fix the value in the configuration "
                    f"file"), line


#: Every table of the schema, to grant on one by one.
_SERVER_TABLES = ("services", "compute_nodes", "allocations", "claim_groups",
                  "stacks", "stack_instances", "drains", "drain_moves",
                  "change_counter", "aggregates", "aggregate_hosts",
                  "aggregate_metadata", "alembic_version")


def _user_granted(kind: str, server, database: str,
                  grants: dict[str, str], sequences: bool = True) -> str:
    """A new user of ``server`` granted ``grants`` (table -> privileges,
    e.g. ``"SELECT, UPDATE"``) on ``database``'s tables, and (PostgreSQL,
    if ``sequences``) USAGE on its sequences; its URL."""
    user = f"partial_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    if kind == "postgresql":
        server.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'pw'")
        for table, privileges in grants.items():
            server.execute(f"GRANT {privileges} ON {table} TO {user}",
                           dbname=database)
        if sequences:
            server.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public "
                           f"TO {user}", dbname=database)
    else:
        for host in ("%", "localhost"):
            server.execute(f"CREATE USER '{user}'@'{host}' IDENTIFIED BY "
                           f"'pw'")
            for table, privileges in grants.items():
                server.execute(f"GRANT {privileges} ON `{database}`.{table} "
                               f"TO '{user}'@'{host}'")
    return server.url_for(database).replace(
        f"//{server.user}:{server.password}@", f"//{user}:pw@")


def _read_only_user(kind: str, server, database: str) -> str:
    """A new user of ``server`` who may read every table of ``database``
    and write none; its URL."""
    return _user_granted(kind, server, database,
                         dict.fromkeys(_SERVER_TABLES, "SELECT"),
                         sequences=False)


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_server_as_a_user_who_may_only_read_exits_in_one_line(
        request, sqlite_config, kind):
    """The SQLite case above on a database server: a user granted SELECT
    only. The server started and failed every heartbeat and claim."""
    server, database = _synced_database(request, sqlite_config, kind)
    reader = _read_only_user(kind, server, database)
    config = sqlite_config(**{"database.connection": reader})
    line = one_line_error(run("server", "--config-file", str(config),
                              timeout=90))
    shown = reader.replace(":pw@", ":***@")
    assert line == (f"ERROR: database {shown} is read-only for this user; "
                    f"run as the user that owns it (e.g. sudo -u scheduler) "
                    f"or grant write access"), line


@pytest.mark.parametrize("zone", ["az:1", " az1", "az1 ", " "])
def test_a_zone_nova_cannot_name_is_refused(sqlite_config, zone):
    """Nova's API refuses such a zone (its az_name format: no ':', which
    splits zone:host:node in a request, no blanks at either end): one
    scheduler-manage accepted could never be asked for."""
    config = str(sqlite_config())
    sync_schema(config)
    expected = (f"ERROR: availability zone {zone!r} has a ':' or leading or "
                f"trailing blanks; nova could not name it in a request")
    assert one_line_error(run("manage", "--config-file", config, "aggregate",
                              "create", "fast", "--zone", zone)) == expected
    assert run("manage", "--config-file", config, "aggregate", "create",
               "fast").returncode == 0
    assert one_line_error(run("manage", "--config-file", config, "aggregate",
                              "set-metadata", "fast",
                              f"availability_zone={zone}")) == expected
    listed = json.loads(run("manage", "--config-file", config, "aggregate",
                            "list", "--json").stdout)
    assert [a["metadata"] for a in listed] == [{}]


@pytest.mark.parametrize("parameters", ["connect_timeout=abc",
                                        "charset=nosuch"])
@pytest.mark.parametrize("command", [("manage", "db", "version"),
                                     ("server",)])
def test_connection_parameters_the_driver_refuses_are_named(
        sqlite_config, mariadb, command, parameters):
    # oslo.db appends them to the URL; SQLAlchemy or PyMySQL then raised a
    # bare ValueError or AttributeError naming no option.
    config = sqlite_config(**{
        "database.connection": mariadb.url,
        "database.connection_parameters": parameters})
    line = one_line_error(run(command[0], "--config-file", str(config),
                              *command[1:]))
    assert line.startswith(f"ERROR: [database] connection with "
                           f"connection_parameters in {config}: the "
                           f"pymysql driver refused them ("), line
    assert line.endswith("); fix the options"), line
    assert mariadb.password not in line, line


def _user_who_may_not_read(kind: str, server, database: str) -> str:
    """A new user of ``server`` who may connect to ``database`` and read
    none of its tables (MariaDB: may only insert); its URL."""
    user = f"blind_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    if kind == "postgresql":
        server.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'pw'")
    else:
        for host in ("%", "localhost"):
            server.execute(f"CREATE USER '{user}'@'{host}' IDENTIFIED BY "
                           f"'pw'")
            server.execute(f"GRANT INSERT ON `{database}`.* TO "
                           f"'{user}'@'{host}'")
    return server.url_for(database).replace(
        f"//{server.user}:{server.password}@", f"//{user}:pw@")


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_server_as_a_user_who_may_not_read_is_not_told_read_only(
        request, sqlite_config, kind):
    """A user refused SELECT itself: granting write access (the read-only
    line's fix) would not let the server start."""
    server, database = _synced_database(request, sqlite_config, kind)
    blind = _user_who_may_not_read(kind, server, database)
    config = sqlite_config(**{"database.connection": blind})
    line = one_line_error(run("server", "--config-file", str(config),
                              timeout=90))
    shown = blind.replace(":pw@", ":***@")
    assert line.startswith(f"ERROR: database {shown} refused this user a "
                           f"read ("), line
    assert line.endswith("); grant it read and write access to the "
                         "scheduler's tables, or run as the user that owns "
                         "them (e.g. sudo -u scheduler)"), line


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_server_as_a_user_refused_the_database_names_the_grant(
        request, sqlite_config, kind):
    """The server refuses the connection itself to a user without the
    database (PostgreSQL: no CONNECT; MariaDB: no privilege, 1044): not a
    read-only database, nor a wrong [database] connection."""
    server, database = _synced_database(request, sqlite_config, kind)
    user = f"nogrant_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    if kind == "postgresql":
        server.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'pw'")
        server.execute(f"REVOKE CONNECT ON DATABASE {database} FROM PUBLIC")
    else:
        for host in ("%", "localhost"):
            server.execute(f"CREATE USER '{user}'@'{host}' IDENTIFIED BY "
                           f"'pw'")
    url = server.url_for(database).replace(
        f"//{server.user}:{server.password}@", f"//{user}:pw@")
    config = sqlite_config(**{"database.connection": url})
    line = one_line_error(run("server", "--config-file", str(config),
                              timeout=90))
    shown = url.replace(":pw@", ":***@")
    assert line.startswith(f"ERROR: database {shown} refused this user ("), \
        line
    assert line.endswith("); grant it access to the database and read and "
                         "write access to the scheduler's tables, or run as "
                         "the user that owns them (e.g. sudo -u scheduler)"), \
        line


def _all_but(table: str, privileges: str, rest: str) -> dict[str, str]:
    return {t: (privileges if t == table else rest) for t in _SERVER_TABLES}


_EVERY = "SELECT, INSERT, UPDATE, DELETE"
#: Each misses one write the server does on its first heartbeat, claim,
#: stack or release (a SELECT-only user is the test above): the grants,
#: whether the user may use PostgreSQL's sequences, the write refused.
_PARTIAL_GRANTS = {
    "no INSERT": ({t: "SELECT, UPDATE" for t in _SERVER_TABLES}, True,
                  "INSERT on table services"),
    "no DELETE": ({t: "SELECT, INSERT, UPDATE" for t in _SERVER_TABLES},
                  True, "DELETE on table allocations"),
    "no INSERT on claim_groups": (
        _all_but("claim_groups", "SELECT, UPDATE", _EVERY), True,
        "INSERT on table claim_groups"),
    "nothing on stacks": (
        {t: _EVERY for t in _SERVER_TABLES if t != "stacks"}, True,
        "UPDATE on table stacks"),
    "nothing on drains": (
        {t: _EVERY for t in _SERVER_TABLES if t != "drains"}, True,
        "INSERT on table drains"),
    "no sequences": ({t: _EVERY for t in _SERVER_TABLES}, False,
                     "USAGE on the sequence of services.id"),
    "no UPDATE on change_counter": (
        _all_but("change_counter", "SELECT", _EVERY), True,
        "UPDATE on table change_counter"),
}


def _synced_database(request, sqlite_config, kind: str):
    """A new database on the ``kind`` server, its schema made by its
    owner: (the server, the database's name)."""
    server = request.getfixturevalue(kind)
    database = f"db_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    owner = sqlite_config(**{
        "database.connection": server.create_database(database)})
    sync_schema(owner)
    return server, database


#: The grant a line names: the tables' (which grants no sequence), but
#: for a sequence refused to a user who may write every table.
_TABLES_GRANT = ("read and write access to the scheduler's tables, or run "
                 "as the user that owns them (e.g. sudo -u scheduler)")
_GRANT_NAMED = {"no sequences": (
    "USAGE on the sequences of the scheduler's tables (a grant on a table "
    "is none on its sequence), or run as the user that owns them (e.g. "
    "sudo -u scheduler)")}

#: MariaDB has no sequence privilege, and its triggers update
#: change_counter as their definer: those two are PostgreSQL's alone.
_POSTGRESQL_ONLY = ("no sequences", "no UPDATE on change_counter")


@pytest.mark.parametrize("kind, missing", [
    (kind, missing) for kind in ("postgresql", "mariadb")
    for missing in _PARTIAL_GRANTS
    if kind == "postgresql" or missing not in _POSTGRESQL_ONLY])
def test_server_as_a_user_missing_a_write_grant_exits_in_one_line(
        request, sqlite_config, kind, missing):
    """The start check wrote nothing but an UPDATE of each of three
    tables: a user who may UPDATE but not INSERT or DELETE, or not touch
    ``stacks`` at all, started and failed its first heartbeat, claim,
    stack or release. It is refused at start, the line naming the write
    refused."""
    grants, sequences, refused = _PARTIAL_GRANTS[missing]
    server, database = _synced_database(request, sqlite_config, kind)
    url = _user_granted(kind, server, database, grants, sequences)
    config = sqlite_config(**{"database.connection": url})
    line = one_line_error(run("server", "--config-file", str(config),
                              timeout=30))
    shown = url.replace(":pw@", ":***@")
    grant = _GRANT_NAMED.get(missing, _TABLES_GRANT)
    assert line == (f"ERROR: database {shown} refused this user {refused}; "
                    f"grant it {grant}"), line


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_start_check_passes_a_user_with_every_write_grant(
        request, sqlite_config, kind):
    """The other side of the test above: the grants the server needs, and
    no more, pass the start check (nothing on the aggregate tables but
    SELECT: only scheduler-manage writes them)."""
    from scheduler.service.database import require_writable
    from scheduler import conf as sched_conf
    from scheduler.db.engine import create_engine

    server, database = _synced_database(request, sqlite_config, kind)
    grants = {t: "SELECT" for t in _SERVER_TABLES}
    grants.update({"services": "SELECT, INSERT, UPDATE",
                   "compute_nodes": "SELECT, UPDATE",
                   "allocations": _EVERY,
                   "claim_groups": "SELECT, INSERT, UPDATE",
                   "stacks": _EVERY,
                   "stack_instances": "SELECT, INSERT, DELETE",
                   "drains": "SELECT, INSERT, DELETE",
                   "drain_moves": _EVERY,
                   # MariaDB's triggers update it as their definer.
                   "change_counter": "SELECT, UPDATE"
                   if kind == "postgresql" else "SELECT"})
    config = sqlite_config(**{"database.connection": _user_granted(
        kind, server, database, grants)})
    conf = sched_conf.load(["--config-file", str(config)])
    engine = create_engine(conf)
    try:
        require_writable(conf, engine)
    finally:
        engine.dispose()


@pytest.mark.parametrize("option, value, why", [
    ("host", "", "Value '' doesn't match regex"),
    ("executor_thread_pool_size", "0", "must be at least 1")])
def test_a_server_option_no_worker_can_use_is_named(sqlite_config, option,
                                                    value, why):
    # Both read as values; the worker then failed on them in
    # oslo.messaging, and the server's line named no option
    # ("InvalidTarget: A server's target must have topic and server names
    # specified", "ValueError: max_workers must be greater than zero").
    config = sqlite_config(**{option: value})
    sync_schema(config)
    line = one_line_error(run("server", "--config-file", str(config)))
    assert line.startswith(f"ERROR: [DEFAULT] {option} "), line
    assert f"{config}" in line and why in line, line


@pytest.mark.parametrize("kind", ("postgresql", "mariadb"))
def test_the_server_s_own_words_keep_their_case(request, sqlite_config,
                                                kind):
    # The line quoted the database server lower-cased: a missing database
    # NoSuchDB was 'database "nosuchdb" does not exist', another name than
    # the one the operator has to create or fix.
    server = request.getfixturevalue(kind)
    config = sqlite_config(**{"database.connection":
                              server.url_for("NoSuchDB")})
    line = one_line_error(run("manage", "--config-file", str(config), "db",
                              "version"))
    detail = line.split("/NoSuchDB", 1)[1]
    assert "'NoSuchDB'" in detail or '"NoSuchDB"' in detail, line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_dir_the_user_may_not_read_is_named(as_nobody, command,
                                                     sqlite_config,
                                                     shared_dir):
    # oslo.config lists a --config-dir's *.conf with glob, which finds
    # nothing in a directory it may not read: every file in it was
    # skipped without a word and the command ran on the defaults (here:
    # "database file /var/lib/scheduler/scheduler.sqlite does not exist").
    conf_d = shared_dir / "scheduler.conf.d"
    conf_d.mkdir(mode=0o700)
    sqlite_config().rename(conf_d / "scheduler.conf")
    line = one_line_error(as_nobody(command, "--config-dir", str(conf_d),
                                    *WORK[command]))
    assert line == (f"ERROR: cannot read configuration directory {conf_d} "
                    f"(permission denied); run as a user that may read it, "
                    f"e.g. sudo -u scheduler"), line


def test_client_with_no_server_returns_within_its_timeout(sqlite_config):
    # The call timed out after --timeout, then the transport's cleanup
    # waited for its idle reply poller (up to 5 s more): "no scheduler
    # answered within 5s" came after 9 s.
    config = sqlite_config()
    started = time.monotonic()
    line = one_line_error(run("client", "--config-file", str(config),
                              "--timeout", "5", "ping"))
    elapsed = time.monotonic() - started
    assert line.startswith("ERROR: no scheduler answered within 5s"), line
    # The 5 s budget plus the interpreter's start (slow on a busy
    # machine); the cleanup's wait took it to 9.1-9.3 s.
    assert elapsed < 8.5, elapsed


@pytest.mark.parametrize("command", ("manage", "fleet", "status"))
def test_a_database_file_that_is_not_sqlite_is_one_line(command, shared_dir,
                                                        sqlite_config):
    # oslo.db logged "DBAPIError exception wrapped." at WARNING with the
    # whole traceback (45 lines) before the command's own line.
    db = shared_dir / "not-a-database.sqlite"
    db.write_bytes(bytes(range(256)) * 20)
    config = sqlite_config(db=db)
    if command == "status":
        result = subprocess.run(
            [sys.executable, "-m", "scheduler.cmd.status", "--config-file",
             str(config), "--broker-timeout", "5", "upgrade", "check"],
            capture_output=True, text=True, timeout=60, cwd="/")
        assert result.returncode == 2, (result.returncode, result.stderr)
        assert result.stderr == "", result.stderr
        assert "file is not a database" in result.stdout, result.stdout
        return
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line == (f"ERROR: database {db} failed: file is not a database; "
                    f"check [database] connection"), line


@pytest.mark.parametrize("option, value, why", [
    ("default_log_levels", "amqp=LOUD", "unknown log level 'LOUD'"),
    ("default_log_levels", "amqp", "unknown log level ''"),
    ("use_journal", "true", "the systemd Python bindings")])
@pytest.mark.parametrize("command", ("server", "manage"))
def test_a_logging_option_oslo_log_cannot_use_is_named(
        sqlite_config, command, option, value, why):
    # oslo.log raised "ValueError: Unknown level: 'LOUD'" or "RuntimeError:
    # Systemd bindings do not exist" while setting up, naming no option.
    if option == "use_journal" and importlib.util.find_spec("systemd"):
        pytest.skip("the systemd bindings are installed here")
    sync_schema(sqlite_config())
    config = sqlite_config(**{option: value})
    line = one_line_error(run(command, "--config-file", str(config),
                              *WORK[command]))
    assert line.startswith(f"ERROR: [DEFAULT] {option} in {config}: "), line
    assert why in line, line


@pytest.mark.parametrize("option", ("logging_default_format_string",
                                    "logging_context_format_string"))
def test_a_log_format_no_line_can_be_written_with_is_named(sqlite_config,
                                                            option):
    # The server started, then wrote "--- Logging error ---" and a
    # traceback for each of its log lines instead of the line.
    sync_schema(sqlite_config())
    config = sqlite_config(**{option: "%(asctime)s %(nosuch)s %(message)s",
                              "scheduler.http_listen": ""})
    line = one_line_error(run("server", "--config-file", str(config),
                              timeout=20))
    assert line.startswith(f"ERROR: [DEFAULT] {option} in {config}: "), line
    assert "nosuch" in line, line


def test_heats_database_without_a_flavors_source_is_one_line(
        sqlite_config, rabbitmq, tmp_path):
    config = sqlite_config(**{
        "transport_url": rabbitmq.transport_url,
        "heat.database_connection": f"sqlite:///{tmp_path}/heat.sqlite"})
    sync_schema(config)
    line = one_line_error(run("server", "--config-file", str(config)))
    assert line.endswith(
        "[heat] database_connection: the flavors Heat's templates name come "
        "from nova's API database or a file: set [nova] "
        "api_database_connection or [heat] flavors_file"), line


def test_heats_database_url_that_is_none_is_one_line(sqlite_config, rabbitmq):
    config = sqlite_config(**{
        "transport_url": rabbitmq.transport_url,
        "heat.database_connection": "heat-db-please",
        "heat.flavors_file": "/etc/scheduler/flavors.yaml"})
    sync_schema(config)
    line = one_line_error(run("server", "--config-file", str(config)))
    assert line.endswith("[heat] database_connection: not a database URL"), \
        line
