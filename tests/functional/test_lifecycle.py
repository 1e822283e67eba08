"""scheduler-server as systemd and an operator see it: sd_notify over a
real NOTIFY_SOCKET, /healthcheck, signals (SIGHUP, SIGTERM, SIGUSR2), and
worker failures that end the server instead of looping."""
from __future__ import annotations

import configparser
import json
import os
from pathlib import Path
import signal
import socket
import threading
import time

import pytest

from tests.fixtures._net import http_get
from tests.functional.conftest import freeze
from tests.functional.conftest import thaw
from tests.functional.waits import lock_waits
from tests.functional.waits import wait_until

#: Generous bounds: they prove "does not hang", they measure nothing.
WAIT = 60


class NotifyListener:
    """What systemd would receive: an AF_UNIX datagram socket, every
    message kept with the time it came."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, dict[str, str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            fields = dict(line.split("=", 1)
                          for line in data.decode().splitlines())
            self.messages.append((time.monotonic(), fields))

    def wait_for(self, key: str, value: str | None = None,
                 timeout: float = WAIT) -> float:
        """When the first message with ``key`` (= ``value``) came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, fields in list(self.messages):
                if key in fields and value in (None, fields[key]):
                    return at
            time.sleep(0.05)
        raise AssertionError(f"no {key}={value} in {self.messages}")

    def values(self, key: str) -> list[str]:
        return [f[key] for _, f in list(self.messages) if key in f]

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def notify_socket(tmp_path):
    listener = NotifyListener(tmp_path / "notify.sock")
    yield listener
    listener.close()


def free_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def get(address: str, path: str) -> tuple[int, str]:
    return http_get(f"http://{address}{path}")


def wait_for_status(address: str, status: int, timeout: float = WAIT
                    ) -> str:
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        try:
            seen = get(address, "/healthcheck")
        except OSError as e:
            seen = (None, str(e))
        if seen[0] == status:
            return seen[1]
        time.sleep(0.2)
    raise AssertionError(f"/healthcheck never {status}; last: {seen}")


def worker_pids(pid: int) -> set[int]:
    """The server's worker processes (its children)."""
    children = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                children.add(int(entry))
    return children


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("ERROR:")]


def set_options(config_file: Path, **options: str) -> None:
    """Change ``group__option`` values in a deployment's config file."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(config_file)
    for key, value in options.items():
        group, option = key.split("__")
        if group != parser.default_section and \
                not parser.has_section(group):
            parser.add_section(group)
        parser.set(group, option, value)
    with open(config_file, "w") as f:
        parser.write(f)


def test_ready_after_every_worker_consumes_then_watchdog_and_stopping(
        make_deployment, notify_socket):
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(2000)
    proc = deployment.start_server(wait=False, env={
        "NOTIFY_SOCKET": notify_socket.path, "WATCHDOG_USEC": "1000000"})

    notify_socket.wait_for("READY", "1")
    # READY came after both workers loaded their table and consumed.
    log = deployment.server_log()
    assert log.count("Host table loaded: 2000 nodes") == 2
    assert log.count("Scheduler worker consuming topic") == 2
    statuses = notify_socket.values("STATUS")
    assert any("loading host table" in s for s in statuses), statuses
    assert statuses[-1] == "2/2 workers consuming", statuses
    # The table is there: the first select loads nothing more.
    deployment.api.select_destinations(
        {}, {"flavor": {"memory_mb": 512, "vcpus": 1, "root_gb": 1}})
    assert deployment.server_log().count("Host table loaded") == 2

    # Pings every WATCHDOG_USEC/2 while healthy.
    first = notify_socket.wait_for("WATCHDOG", "1")
    deadline = time.monotonic() + WAIT
    while len(notify_socket.values("WATCHDOG")) < 3 and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(notify_socket.values("WATCHDOG")) >= 3
    assert first >= notify_socket.wait_for("READY")

    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=WAIT) == 0
    notify_socket.wait_for("STOPPING", "1", timeout=1)


def test_watchdog_stops_while_a_worker_is_wedged(make_deployment,
                                                 notify_socket):
    deployment = make_deployment()
    deployment.fleet(10)
    address = free_address()
    set_options(deployment.config_file, scheduler__http_listen=address)
    proc = deployment.start_server(env={
        "NOTIFY_SOCKET": notify_socket.path, "WATCHDOG_USEC": "1000000"})
    notify_socket.wait_for("READY", "1")
    [worker] = worker_pids(proc.pid)
    os.kill(worker, signal.SIGSTOP)
    try:
        body = wait_for_status(address, 503)
        assert f"worker 0 (pid {worker}) not responding" in body
        pings = len(notify_socket.values("WATCHDOG"))
        time.sleep(2)   # four ping intervals
        assert len(notify_socket.values("WATCHDOG")) == pings
        assert "not responding" in notify_socket.values("STATUS")[-1]
    finally:
        os.kill(worker, signal.SIGCONT)
    assert wait_for_status(address, 200) == "OK\n"


BROKEN_DRIVER = """
class BrokenDriver:
    def __init__(self, conf, host_manager, engine):
        raise ValueError("no GPU inventory in [gpu] section")
"""


def broken_driver_site(root: Path) -> dict[str, str]:
    """A third-party driver, found by its entry point on PYTHONPATH, that
    fails when a worker builds it (the start-up check only asks whether
    it is installed)."""
    site = root / "broken-site"
    info = site / "broken_driver-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "broken_driver.py").write_text(BROKEN_DRIVER)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: broken_driver\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[scheduler.driver]\nbroken = broken_driver:BrokenDriver\n")
    path = [str(site)] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join(path)}


def test_worker_failing_for_good_ends_the_server_with_one_line(
        make_deployment, notify_socket, tmp_path):
    deployment = make_deployment(scheduler__workers=2,
                                 scheduler__driver="broken")
    env = broken_driver_site(tmp_path)
    proc = deployment.start_server(wait=False, env={
        **env, "NOTIFY_SOCKET": notify_socket.path})

    assert proc.wait(timeout=WAIT) == 1
    log = deployment.server_log()
    assert error_lines(log) == [
        "ERROR: [scheduler] driver: driver 'broken' failed to load: "
        "ValueError: no GPU inventory in [gpu] section"]
    assert "Traceback" not in log
    assert "Forking too fast" not in log
    assert notify_socket.values("READY") == []
    assert any("failed: [scheduler] driver: driver 'broken' failed" in s
               for s in notify_socket.values("STATUS"))


def test_healthcheck_follows_the_database(make_deployment, database_url):
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(10)
    address = free_address()
    set_options(deployment.config_file, scheduler__http_listen=address)
    deployment.start_server()
    assert wait_for_status(address, 200) == "OK\n"
    assert get(address, "/nothing")[0] == 404

    path = Path(deployment.conf.database.connection.split(":///", 1)[1])
    path.rename(path.with_suffix(".away"))
    try:
        body = wait_for_status(address, 503)
        assert f"database: database file {path} does not exist" in body
        assert body.startswith("2/2 workers consuming")
        assert len(body.splitlines()) == 1
    finally:
        path.with_suffix(".away").rename(path)
    assert wait_for_status(address, 200) == "OK\n"


def test_listen_address_in_use_refuses_to_start(make_deployment):
    deployment = make_deployment()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        set_options(deployment.config_file, scheduler__http_listen=address)
        proc = deployment.start_server(wait=False)
        assert proc.wait(timeout=WAIT) == 1
    [line] = error_lines(deployment.server_log())
    assert line.startswith(f"ERROR: cannot listen on {address} "
                           f"([scheduler] http_listen): Address already "
                           f"in use"), line


def _rank(deployment) -> dict:
    result = deployment.client("--json", "rank", "--limit", "10")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def assert_weighed_with(rank: dict, ram_weight_multiplier: float) -> None:
    """Each host's weight is its normalized weigher values times their
    multipliers: the RAM weigher's as given, the others' the default 1."""
    assert len(rank["hosts"]) > 1
    for host in rank["hosts"]:
        expected = sum(value * (ram_weight_multiplier
                                if name == "RAMWeigher" else 1.0)
                       for name, value in host["weights"].items())
        assert host["weight"] == pytest.approx(expected), host
    assert any(h["weights"]["RAMWeigher"] for h in rank["hosts"])


def test_sighup_applies_filters_and_multipliers_without_restarting(
        make_deployment):
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(10)
    proc = deployment.start_server()
    pids = worker_pids(proc.pid)
    before = _rank(deployment)
    assert "RamFilter" in [s["name"] for s in before["filters"]]
    assert_weighed_with(before, ram_weight_multiplier=1.0)

    set_options(deployment.config_file,
                filter_scheduler__enabled_filters="ComputeFilter",
                filter_scheduler__ram_weight_multiplier="-2.0")
    os.kill(proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + WAIT
    while deployment.server_log().count("applied the configuration") < 2:
        assert time.monotonic() < deadline, deployment.server_log()
        time.sleep(0.2)

    # Both workers answer with the new set (ask more than twice).
    for _ in range(6):
        after = _rank(deployment)
        assert [s["name"] for s in after["filters"]] == [
            "ComputeFilter", "RamFilter", "CoreFilter", "DiskFilter"]
        assert_weighed_with(after, ram_weight_multiplier=-2.0)
    log = deployment.server_log()
    # Each worker logs what it runs, the capacity filters it added too.
    assert log.count("applied the configuration: filters ComputeFilter, "
                     "RamFilter, CoreFilter, DiskFilter; weighers") == 2
    assert worker_pids(proc.pid) == pids
    assert log.count("Host table loaded") == 2
    assert "Ignoring change to immutable option" not in log


def test_sighup_with_an_unknown_filter_keeps_the_old_set(make_deployment):
    deployment = make_deployment()
    deployment.fleet(5)
    proc = deployment.start_server()
    set_options(deployment.config_file,
                filter_scheduler__enabled_filters="ComputeFilter,NoSuch")
    os.kill(proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + WAIT
    while "keeps its previous filters" not in deployment.server_log():
        assert time.monotonic() < deadline, deployment.server_log()
        time.sleep(0.2)
    assert "RamFilter" in [s["name"] for s in
                           _rank(deployment)["filters"]]
    assert "Traceback" not in deployment.server_log()


def wait_for_log(deployment, text: str) -> None:
    deadline = time.monotonic() + WAIT
    while text not in deployment.server_log():
        assert time.monotonic() < deadline, deployment.server_log()
        time.sleep(0.2)


@pytest.mark.parametrize("change", ["bad filter", "bad value",
                                    "bad value of a logging option",
                                    "unparsable file"])
def test_a_refused_sighup_changes_nothing_new_workers_are_forked_from(
        make_deployment, change):
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(5)
    proc = deployment.start_server()
    wait_for_log(deployment, "Ready: 2/2 workers consuming")
    good = deployment.config_file.read_text()
    if change == "bad filter":
        set_options(deployment.config_file,
                    filter_scheduler__enabled_filters="ComputeFilter,NoSuch")
    elif change == "bad value":
        set_options(deployment.config_file,
                    filter_scheduler__host_subset_size="x")
    elif change == "bad value of a logging option":
        # oslo.log's options are command-line options too, checked apart.
        set_options(deployment.config_file, DEFAULT__debug="maybe")
    else:
        with open(deployment.config_file, "a") as f:
            f.write("this is [not valid\n")
    os.kill(proc.pid, signal.SIGHUP)
    wait_for_log(deployment, "SIGHUP refused")
    if change in ("unparsable file", "bad value of a logging option"):
        # The client reads it too; the server read it once, at the signal.
        deployment.config_file.write_text(good)

    # A worker that dies now is replaced from the main process, which
    # must still hold the configuration in force.
    before = worker_pids(proc.pid)
    os.kill(min(before), signal.SIGKILL)
    deadline = time.monotonic() + WAIT
    while True:
        now = worker_pids(proc.pid)
        if len(now) == 2 and min(before) not in now and \
                f" {(now - before).pop()} INFO scheduler.service.worker " \
                f"[-] Host table loaded" in deployment.server_log():
            break
        assert proc.poll() is None, deployment.server_log()[-3000:]
        assert time.monotonic() < deadline, deployment.server_log()
        time.sleep(0.2)
    for _ in range(4):          # both workers answer, with the old set
        assert "RamFilter" in [s["name"] for s in
                               _rank(deployment)["filters"]]
    [refused] = [line for line in deployment.server_log().splitlines()
                 if "SIGHUP refused" in line]
    assert {"bad filter": "NoSuch", "bad value": "host_subset_size",
            "bad value of a logging option": "[DEFAULT] debug",
            "unparsable file": "cannot parse"}[change] in refused
    assert "Traceback" not in deployment.server_log()


def test_sigusr2_writes_a_report_and_the_server_keeps_serving(
        make_deployment):
    deployment = make_deployment(scheduler__workers=2)
    proc = deployment.start_server()
    os.kill(proc.pid, signal.SIGUSR2)
    for worker in worker_pids(proc.pid):
        os.kill(worker, signal.SIGUSR2)
    deadline = time.monotonic() + WAIT
    while deployment.server_log().count("Guru Meditation") < 3:
        assert time.monotonic() < deadline, deployment.server_log()
        time.sleep(0.2)
    log = deployment.server_log()
    assert "Threads" in log and "Configuration" in log
    assert "product = scheduler-server" in log
    assert deployment.api.ping({})["host"] == deployment.conf.host
    assert proc.poll() is None


def test_sigterm_exits_promptly_with_the_broker_down(make_deployment,
                                                     rabbitmq):
    deployment = make_deployment(scheduler__workers=2)
    proc = deployment.start_server()
    rabbitmq.kill()   # data and port kept for start() below
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        # Well under the 60 s graceful shutdown timeout it used to wait.
        assert proc.wait(timeout=30) == 0
    finally:
        rabbitmq.start()
    assert "stops without draining" in deployment.server_log()


FLAVOR = {"memory_mb": 512, "vcpus": 1, "root_gb": 1}


def _hold_nodes(deployment):
    """Lock every compute node row: a claim then waits in its UPDATE (a
    request in flight for as long as the test wants). Close to let go."""
    import sqlalchemy as sa
    from scheduler.db import models
    holder = deployment.engine.connect()
    holder.begin()
    holder.execute(sa.select(models.compute_nodes).with_for_update())
    return holder


def _call_in_background(deployment, spec):
    outcome = {}

    def call():
        try:
            outcome["placed"] = deployment.api.select_destinations({}, spec)
        except Exception as e:
            outcome["error"] = e
    caller = threading.Thread(target=call)
    caller.start()
    return caller, outcome


def test_serves_again_after_the_broker_restarts_while_idle(
        make_deployment, rabbitmq, database_url):
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(10)
    proc = deployment.start_server()
    deployment.api.select_destinations({}, {"flavor": FLAVOR})
    rabbitmq.restart()
    placed = [deployment.api.select_destinations({}, {"flavor": FLAVOR})
              for _ in range(6)]
    assert len(deployment.allocations()) == 7
    assert len({p[0]["uuid"] for p in placed}) == 6
    assert proc.poll() is None
    assert "Traceback" not in deployment.server_log()


@pytest.mark.databases("postgresql")
def test_a_call_in_flight_across_a_broker_restart_is_answered_once(
        make_deployment, rabbitmq, database_url):
    deployment = make_deployment()
    deployment.fleet(3)
    deployment.start_server()
    deployment.api.select_destinations({}, {"flavor": FLAVOR})
    holder = _hold_nodes(deployment)
    uuid = "8c7c5b52-7c8e-4d47-9f3c-0c7a1b2b9a01"
    with lock_waits(deployment.engine) as waiting:
        caller, outcome = _call_in_background(
            deployment, {"flavor": FLAVOR, "instance_uuids": [uuid]})
        waiting(1)              # its claim, behind the holder
    rabbitmq.restart()
    holder.close()
    caller.join(150)
    assert not caller.is_alive()
    assert "placed" in outcome, outcome
    assert outcome["placed"][0]["uuid"] == uuid
    allocations = deployment.allocations()
    assert len(allocations) == 2
    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout


@pytest.mark.databases("postgresql")
def test_sigterm_answers_the_calls_in_flight(make_deployment, database_url,
                                             notify_socket):
    deployment = make_deployment()
    deployment.fleet(3)
    proc = deployment.start_server(env={"NOTIFY_SOCKET": notify_socket.path})
    deployment.api.select_destinations({}, {"flavor": FLAVOR})
    holder = _hold_nodes(deployment)
    with lock_waits(deployment.engine) as waiting:
        caller, outcome = _call_in_background(deployment, {"flavor": FLAVOR})
        waiting(1)              # its claim, behind the holder
    os.kill(proc.pid, signal.SIGTERM)
    notify_socket.wait_for("STOPPING", "1")
    holder.close()
    caller.join(WAIT)
    assert not caller.is_alive()
    assert "placed" in outcome, outcome
    assert proc.wait(timeout=WAIT) == 0
    assert len(deployment.allocations()) == 2
    assert "Traceback" not in deployment.server_log()


@pytest.mark.databases("postgresql", "mysql")
def test_sigterm_after_a_database_restart_stops_cleanly(
        make_deployment, database_server):
    """The connections a worker keeps between requests (its refreshes',
    its claims') died with the database's restart; the worker has served
    no request since. Stopping it drops them without a traceback (the
    failed rollback of a lost connection, on MariaDB) and the server exits
    0."""
    deployment = make_deployment()
    deployment.fleet(3)
    proc = deployment.start_server()
    deployment.api.select_destinations({}, {"flavor": FLAVOR})
    database_server.restart()

    os.killpg(proc.pid, signal.SIGTERM)

    assert proc.wait(timeout=WAIT) == 0, deployment.server_log()
    log = deployment.server_log()
    assert "Traceback" not in log, log
    assert len(deployment.allocations()) == 1


@pytest.mark.databases("postgresql", "mysql")
def test_sigterm_while_a_request_waits_for_the_database_exits_promptly(
        make_deployment, database_server):
    """A request waiting out a database outage ([scheduler]
    db_outage_timeout) must not hold the shutdown for that long: SIGTERM
    ends its wait, it is answered with its one line, the server exits 0
    within seconds and the log has no traceback."""
    deployment = make_deployment(scheduler__db_outage_timeout=120)
    deployment.fleet(3)
    proc = deployment.start_server()
    deployment.api.select_destinations({}, {"flavor": FLAVOR})
    database_server.kill()
    try:
        caller, outcome = _call_in_background(deployment, {"flavor": FLAVOR})
        caller.join(3)
        assert caller.is_alive(), outcome      # still waiting
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=WAIT) == 0, deployment.server_log()
        assert time.monotonic() - started < 10
        caller.join(WAIT)
    finally:
        database_server.start()
    assert not caller.is_alive()
    assert "check [database] connection" in str(outcome.get("error")), \
        outcome
    log = deployment.server_log()
    assert "Traceback" not in log, log


@pytest.mark.databases("postgresql", "mysql")
def test_sigterm_while_a_request_waits_for_a_frozen_database_exits_promptly(
        make_deployment, database_server):
    """A request whose statement waits for a database server that stopped
    answering (frozen: its connections stay open) must not hold the
    shutdown: the server exits 0 within seconds, the request is answered
    with its one line, and the log has no traceback."""
    deployment = make_deployment(scheduler__db_lock_timeout=3,
                                 scheduler__db_outage_timeout=120)
    deployment.fleet(3)
    proc = deployment.start_server()
    deployment.api.select_destinations({}, {"flavor": FLAVOR})
    freeze(database_server)
    try:
        caller, outcome = _call_in_background(deployment, {"flavor": FLAVOR})
        caller.join(2)
        assert caller.is_alive(), outcome      # its statement waits
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=WAIT) == 0, deployment.server_log()
        took = time.monotonic() - started
        caller.join(WAIT)
    finally:
        thaw(database_server)
    # The round trips' bound (3 s + the margin; the request's perhaps after
    # the periodic refresh's), not db_outage_timeout nor the graceful
    # shutdown timeout.
    assert took < 20, took
    assert not caller.is_alive()
    assert "check [database] connection" in str(outcome.get("error")), \
        outcome
    log = deployment.server_log()
    assert "Traceback" not in log, log


def test_a_killed_worker_is_replaced_and_the_server_stays_ready(
        make_deployment, database_url):
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(10)
    address = free_address()
    set_options(deployment.config_file, scheduler__http_listen=address)
    proc = deployment.start_server()
    assert wait_for_status(address, 200) == "OK\n"
    victim = sorted(worker_pids(proc.pid))[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + WAIT
    while len(worker_pids(proc.pid) - {victim}) < 2:
        assert time.monotonic() < deadline, deployment.server_log()
        time.sleep(0.2)
    assert wait_for_status(address, 200) == "OK\n"
    for _ in range(6):
        deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert len(deployment.allocations()) == 6
    assert proc.poll() is None


@pytest.mark.databases("postgresql")
def test_a_worker_replaced_while_the_database_refuses_new_sessions_starts_later(
        make_deployment, postgresql, database_url):
    """A worker that dies while PostgreSQL is shutting down (or starting
    up: it refuses new sessions with "the database system is shutting
    down" / "starting up") is forked again until the database answers;
    the database coming back is something a restart can fix, so the
    server must not give up for good."""
    import psycopg2
    deployment = make_deployment(scheduler__workers=2)
    deployment.fleet(5)
    proc = deployment.start_server()
    # A session of our own keeps a smart shutdown waiting: meanwhile the
    # server refuses every new session.
    holder = psycopg2.connect(postgresql.url.replace("+psycopg2", ""))
    try:
        postgresql._proc.send_signal(signal.SIGTERM)
        victim = sorted(worker_pids(proc.pid))[0]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, deployment.server_log()
    finally:
        holder.close()
        # Fast mode ends the sessions a smart shutdown waits for.
        postgresql.restart()
    deadline = time.monotonic() + WAIT
    while len(worker_pids(proc.pid) - {victim}) < 2 or \
            deployment.server_log().count("Scheduler worker consuming") < 3:
        assert time.monotonic() < deadline and proc.poll() is None, \
            deployment.server_log()
        time.sleep(0.5)
    deployment.heartbeat()
    deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert error_lines(deployment.server_log()) == []


@pytest.mark.databases("postgresql")
def test_healthcheck_names_a_database_refusing_sessions_in_one_line(
        make_deployment, postgresql, database_url):
    """PostgreSQL's messages end in a newline; the verdict is still one
    line, in /healthcheck and in the log."""
    import psycopg2
    deployment = make_deployment()
    deployment.fleet(2)
    address = free_address()
    set_options(deployment.config_file, scheduler__http_listen=address)
    deployment.start_server()
    assert wait_for_status(address, 200) == "OK\n"
    holder = psycopg2.connect(postgresql.url.replace("+psycopg2", ""))
    try:
        postgresql._proc.send_signal(signal.SIGTERM)   # smart shutdown
        body = wait_for_status(address, 503)
    finally:
        holder.close()
        postgresql.restart()
    assert "the database system is shutting down" in body
    assert len(body.strip().splitlines()) == 1, body
    [line] = [line for line in deployment.server_log().splitlines()
              if "WARNING scheduler.service.health" in line and "shutting" in line]
    assert line.rstrip().endswith("check [database] connection"), line


@pytest.mark.databases("postgresql")
def test_a_reply_lost_with_the_broker_is_recovered_by_the_retry(
        make_deployment, rabbitmq, database_url, caplog):
    """The broker is away longer than the call's timeout, after the server
    claimed but before it could reply: the client's re-send (same
    consumers) gets what they hold, claimed once."""
    from scheduler.rpc.client import SchedulerAPI
    deployment = make_deployment()
    deployment.fleet(3)
    deployment.start_server()
    api = SchedulerAPI(deployment.conf, timeout=10)
    api.ping({})
    holder = _hold_nodes(deployment)
    uuid = "8c7c5b52-7c8e-4d47-9f3c-0c7a1b2b9a02"
    outcome = {}

    def call():
        try:
            outcome["placed"] = api.select_destinations(
                {}, {"flavor": FLAVOR, "instance_uuids": [uuid]})
        except Exception as e:
            outcome["error"] = e
    caller = threading.Thread(target=call)
    with lock_waits(deployment.engine) as waiting:
        caller.start()
        waiting(1)              # its claim, behind the holder
    try:
        rabbitmq.kill()
        holder.close()          # the claim commits; its reply cannot leave
        # The first call times out while the broker is away; the client
        # then re-sends, and keeps trying until the broker is back.
        wait_until(lambda: "re-sending the same request" in caplog.text,
                   "the client's re-send", timeout=60)
    finally:
        rabbitmq.start()
    caller.join(120)
    api.transport.cleanup()
    assert not caller.is_alive()
    assert "placed" in outcome, outcome
    assert outcome["placed"][0]["uuid"] == uuid
    assert [a.consumer_uuid for a in deployment.allocations()] == [uuid]
    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout
