"""A scheduler deployment for functional tests: real RabbitMQ (the session
broker), a real database (SQLite file by default), fleets made with
``scheduler-fleet`` and ``scheduler-server`` running as a subprocess.

Every deployment gets its own topic on the shared broker, so servers of
different tests never answer each other's calls.
"""
from __future__ import annotations

from collections.abc import Iterator
import contextlib
import dataclasses
import datetime
import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import time
import uuid

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler import conf as sched_conf
from scheduler.sim import fleet
from scheduler.db.engine import create_engine
from scheduler.db import migration
from scheduler.db import models
from scheduler.rpc.client import SchedulerAPI
from tests.conftest import DATABASE_SERVERS
from tests.fixtures.availability import require
from tests.fixtures.config import write_config
from tests.fixtures.venvs import venv_python
from tests.fixtures.venvs import VenvError
from tests.fixtures.heat import HeatEngine
from tests.fixtures.heat import read_only_url
from tests.fixtures.nova_cloud import NovaCloud
from tests.fixtures.nova_cloud import NovaDriver
from tests.fixtures.nova_cloud import NovaTemplates

START_TIMEOUT = 60
ROOT = Path(__file__).resolve().parents[2]


def stop_process_groups(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each process's group (a server and its workers), wait for
    all, SIGKILL a group still there after 30 s."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run_command(module: str, *args: str, check: bool = True,
                timeout: float = 120) -> subprocess.CompletedProcess:
    """Run one of our console scripts (``python -m scheduler.cmd.X``)."""
    result = subprocess.run([sys.executable, "-m", f"scheduler.cmd.{module}",
                             *args], capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"scheduler-{module} {' '.join(args)} failed "
                             f"({result.returncode}):\n{result.stderr}")
    return result


@contextlib.contextmanager
def config_engine(config_file: Path | str) -> Iterator[sa.Engine]:
    """The engine the service makes from ``config_file``, disposed of
    afterwards."""
    engine = create_engine(sched_conf.load(["--config-file",
                                               str(config_file)]))
    try:
        yield engine
    finally:
        engine.dispose()


def sync_schema(config_file: Path | str) -> None:
    """What ``scheduler-manage db sync`` does, done in this process: the
    schema at head in the configured database. For a test's set-up, where
    the command's own start would only spend a second of CPU."""
    with config_engine(config_file) as engine:
        migration.upgrade(engine)


def register_fleet(config_file: Path | str, nodes: int,
                   seed: int = 0) -> None:
    """What ``scheduler-fleet --nodes N --seed S --once`` does, done in
    this process, on the configured database."""
    with config_engine(config_file) as engine:
        _register_fleet(engine, nodes, seed)


def _register_fleet(engine: sa.Engine, nodes: int, seed: int) -> None:
    made = fleet.make_nodes(nodes, seed)
    fleet.register(engine, made)
    fleet.heartbeat(engine, [n.host for n in made])


@dataclasses.dataclass
class Deployment:
    """One scheduler service: config file, database, servers, a client."""
    path: Path
    config_file: Path
    conf: object
    engine: sa.Engine
    servers: list = dataclasses.field(default_factory=list)
    _api: SchedulerAPI | None = None

    @property
    def api(self) -> SchedulerAPI:
        if self._api is None:
            self._api = SchedulerAPI(self.conf, timeout=30)
        return self._api

    def manage(self, *args: str, check: bool = True):
        return run_command("manage", "--config-file", str(self.config_file),
                           *args, check=check)

    def client(self, *args: str, check: bool = False):
        return run_command("client", "--config-file", str(self.config_file),
                           *args, check=check)

    def fleet(self, nodes: int, seed: int = 0) -> None:
        """What ``scheduler-fleet --nodes N --seed S --once`` does."""
        _register_fleet(self.engine, nodes, seed)

    def add_nodes(self, nodes: list[fleet.Node]) -> None:
        """Register hand-made nodes (exact sizes) and heartbeat them."""
        fleet.register(self.engine, nodes)
        self.heartbeat()

    def heartbeat(self) -> None:
        with self.engine.connect() as conn:
            hosts = [r.host for r in conn.execute(
                sa.select(models.services.c.host))]
        fleet.heartbeat(self.engine, hosts)

    def start_server(self, name: str | None = None, wait: bool = True,
                     extra_args: tuple[str, ...] = (),
                     env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start scheduler-server; ``env`` adds to (or overrides) this
        process's environment, e.g. a ``PYTHONPATH`` with plugins."""
        args = [sys.executable, "-m", "scheduler.cmd.server",
                "--config-file", str(self.config_file), *extra_args]
        log = open(self.path / f"server-{len(self.servers)}.log", "w")
        environ = dict(os.environ)
        environ.update(env or {})
        if name:
            environ["OS_DEFAULT__HOST"] = name
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                env=environ, start_new_session=True)
        self.servers.append(proc)
        if wait:
            self.wait_until_serving(proc)
        return proc

    def wait_until_serving(self, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        probe = SchedulerAPI(self.conf, transport=self.api.transport,
                             timeout=2)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(
                    f"scheduler-server exited with {proc.returncode}:\n"
                    + self.server_log())
            try:
                probe.ping({})
                return
            except messaging.MessagingTimeout:
                continue
        raise AssertionError("scheduler-server did not answer ping:\n"
                             + self.server_log())

    def server_log(self, index: int = -1) -> str:
        logs = sorted(self.path.glob("server-*.log"))
        return logs[index].read_text() if logs else ""

    def stop_servers(self) -> None:
        stop_process_groups(self.servers)
        self.servers.clear()

    def allocations(self) -> list[sa.Row]:
        with self.engine.connect() as conn:
            return list(conn.execute(sa.select(models.allocations)))

    def age_claims(self, seconds: int) -> datetime.datetime:
        """Move every claim's deadline ``seconds`` closer, as if that much
        of its TTL had passed. :returns: the one deadline they shared."""
        a = models.allocations
        # Read, then write in a transaction of its own: on SQLite a
        # transaction that read first cannot write once the server has
        # committed since (a heartbeat), and SQLite says "database is
        # locked" at once.
        with self.engine.connect() as conn:
            [deadline] = set(conn.execute(sa.select(a.c.expires_at))
                             .scalars())
        with self.engine.begin() as conn:
            conn.execute(a.update().values(
                expires_at=deadline - datetime.timedelta(seconds=seconds)))
        return deadline

    def nodes(self) -> dict[str, sa.Row]:
        with self.engine.connect() as conn:
            return {r.host: r for r in conn.execute(
                sa.select(models.compute_nodes))}

    def close(self) -> None:
        self.stop_servers()
        if self._api is not None:
            self._api.transport.cleanup()
        self.engine.dispose()


#: What ``@every_database`` runs a test on: the three the service supports.
DATABASES = ("sqlite", "postgresql", "mysql")

#: For a test whose behaviour depends on the database (claims, locking,
#: migrations, retries, change tracking, concurrency, capacity in SQL,
#: moves' SQL, a stack's transaction): run it on each of the three. Every
#: other test runs once, on SQLite: what it checks is the same on all.
every_database = pytest.mark.databases(*DATABASES)


def pytest_generate_tests(metafunc) -> None:
    """Give each test that uses ``database_url`` its databases: those its
    closest ``@pytest.mark.databases(...)`` names, else SQLite alone."""
    if "database_url" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("databases")
    kinds = marker.args if marker else ("sqlite",)
    unknown = set(kinds) - set(DATABASES)
    if unknown:
        raise ValueError(f"@databases names {sorted(unknown)}; "
                         f"known: {', '.join(DATABASES)}")
    metafunc.parametrize("database_url", kinds, indirect=True)


def _new_database(request, kind: str, tmp_path: Path,
                  name: str = "scheduler") -> str:
    """The URL of a new empty database: a file for SQLite, else a database
    of its own on the session's server."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path}/{name}.sqlite"
    server = request.getfixturevalue(DATABASE_SERVERS[kind])
    return server.create_database(f"test_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def database_url(request, tmp_path) -> str:
    """A new empty database of the kind this test is run on (see
    :func:`pytest_generate_tests`): a SQLite file, or a database of its
    own on the session's PostgreSQL or MariaDB (``mysql``) server."""
    return _new_database(request, request.param, tmp_path)


@pytest.fixture
def database_server(request, database_url):
    """The session's server behind ``database_url`` (PostgreSQL or
    MariaDB), for tests that stop, freeze or restart it."""
    kind = request.node.callspec.params["database_url"]
    return request.getfixturevalue(DATABASE_SERVERS[kind])


@pytest.fixture
def engine(database_url, conf):
    """An engine made the way the service makes it, on ``database_url``,
    with the schema at head and no rows. A test file that needs rows
    overrides it with a fixture of the same name that asks for this one."""
    conf.set_override("connection", database_url, group="database")
    engine = create_engine(conf)
    migration.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def new_database(request, tmp_path, database_url):
    """Factory: ``new_database()`` is the URL of another empty database of
    the same kind as ``database_url``."""
    kind = request.node.callspec.params["database_url"]
    return lambda: _new_database(request, kind, tmp_path,
                                 name=f"db-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def make_deployment(rabbitmq, database_url, tmp_path):
    """Factory: ``make_deployment(**options)`` writes a config (options as
    ``group__option=value``), syncs the schema; servers are started by the
    test. Everything is stopped at teardown."""
    made: list[Deployment] = []

    def factory(sync_schema: bool = True, **options) -> Deployment:
        path = tmp_path / f"deployment-{len(made)}"
        path.mkdir()
        settings = {
            "state_path": path,
            "transport_url": rabbitmq.transport_url,
            "host": f"sched-{uuid.uuid4().hex[:6]}",
            "scheduler.topic": f"scheduler-{uuid.uuid4().hex}",
            "scheduler.periodic_task_interval": 1,
            "database.connection": database_url,
            # Off unless a test asks: servers of one deployment (and of
            # tests running at once) would all want the default port.
            "scheduler.http_listen": "",
        }
        settings.update({k.replace("__", "."): v for k, v in options.items()})
        config_file = write_config(path, settings)
        conf = sched_conf.load(["--config-file", str(config_file)])
        deployment = Deployment(path, config_file, conf,
                                create_engine(conf))
        made.append(deployment)
        if sync_schema:
            migration.upgrade(deployment.engine)
        return deployment

    yield factory
    for deployment in made:
        deployment.close()


#: How every line oslo.log writes begins: its date and time.
_LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(scope="session")
def nova_python() -> str:
    """The python of the nova==34.0.0 virtualenv, built on first use."""
    try:
        return venv_python("nova-venv")
    except VenvError as e:
        require("nova==34.0.0 virtualenv", str(e))


@pytest.fixture(scope="session")
def nova_cells(nova_python, tmp_path_factory) -> Iterator[dict]:
    """What the session's nova clouds share: the nova_cells_driver.py
    process (started on first use) and each database kind's templates
    (built by nova-manage on first use): ``{"driver": NovaDriver,
    "templates": {kind: NovaTemplates}}``."""
    shared: dict = {"driver": None, "templates": {},
                    "dir": tmp_path_factory.mktemp("nova-cells")}
    yield shared
    if shared["driver"] is not None:
        shared["driver"].close()


@pytest.fixture
def nova_cloud(request, database_url, nova_python, nova_cells,
               tmp_path, tmp_path_factory) -> Iterator[NovaCloud]:
    """A nova deployment of the test's own on the database kind the test
    runs on (``database_url``'s: SQLite unless ``@every_database`` or
    ``@pytest.mark.databases``): API database, cell0, cell1, cell2 with
    nova's schemas, built by nova-manage once per kind and session and
    copied for each test (tests/fixtures/nova_cloud.py). Its databases
    are dropped afterwards."""
    kind = request.node.callspec.params["database_url"]
    templates = nova_cells["templates"].get(kind)
    if templates is None:
        server = (request.getfixturevalue(DATABASE_SERVERS[kind])
                  if kind in DATABASE_SERVERS else None)
        if kind == "sqlite":
            # Files: shared by every pytest worker of the run (built by
            # the first, under a lock, in the run's own directory).
            base = tmp_path_factory.getbasetemp()
            work_dir = (base.parent if os.environ.get("PYTEST_XDIST_WORKER")
                        else base) / "nova-sqlite-templates"
            work_dir.mkdir(exist_ok=True)
        else:
            work_dir = nova_cells["dir"] / kind
            work_dir.mkdir()
        templates = NovaTemplates(kind, nova_python, server, work_dir)
        nova_cells["templates"][kind] = templates
    if nova_cells["driver"] is None or nova_cells["driver"].proc.poll() \
            is not None:
        # First use, or an earlier test's driver died (killed when it
        # stopped answering): a new one for this test.
        nova_cells["driver"] = NovaDriver(nova_python, nova_cells["dir"])
    cloud = templates.copy(tmp_path, nova_cells["driver"])
    yield cloud
    cloud.close()


@pytest.fixture(scope="session")
def heat_python() -> str:
    """The python of the openstack-heat==27.0.1 virtualenv, built on
    first use."""
    try:
        return venv_python("heat-venv")
    except VenvError as e:
        require("openstack-heat==27.0.1 virtualenv", str(e))


@pytest.fixture(scope="session")
def heat_engines(heat_python, tmp_path_factory) -> Iterator[dict]:
    """The session's heat_driver.py process (``{"engine": HeatEngine or
    None}``), started by the first test that asks for ``heat``."""
    shared: dict = {"engine": None, "started": 0,
                    "dir": tmp_path_factory.mktemp("heat")}
    yield shared
    if shared["engine"] is not None:
        shared["engine"].close()


@pytest.fixture
def heat(heat_engines, heat_python) -> HeatEngine:
    """Heat's own code writing stacks (tests/functional/heat_driver.py in
    the Heat venv): one process for the session, started again if an
    earlier test's stopped answering (and was killed)."""
    engine = heat_engines["engine"]
    if engine is None or engine.proc.poll() is not None:
        heat_engines["started"] += 1
        engine = heat_engines["engine"] = HeatEngine(
            heat_python,
            heat_engines["dir"] / f"heat-driver-{heat_engines['started']}.log")
    return engine


@pytest.fixture
def new_heat_database(request, tmp_path):
    """Factory: ``new_heat_database(kind)`` is ``(admin_url,
    read_only_url)`` of a new empty database for Heat, of kind ``sqlite``,
    ``postgresql`` or ``mysql`` (a database of its own on the session's
    server): Heat writes with the first (``heat.store`` makes Heat's
    schema), the scheduler reads with the second, a user who may read
    every table and write none (on SQLite, the file opened read-only)."""
    def factory(kind: str) -> tuple[str, str]:
        admin = _new_database(request, kind, tmp_path,
                              name=f"heat-{uuid.uuid4().hex[:8]}")
        server = (request.getfixturevalue(DATABASE_SERVERS[kind])
                  if kind in DATABASE_SERVERS else None)
        return admin, read_only_url(kind, admin, server)
    return factory


def continued_lines(log: str) -> list[str]:
    """The lines of a server log that do not begin a record: a record
    that spans lines (a traceback, a driver's message with its hints)
    where an operator must get one."""
    return [line for line in log.splitlines() if not _LOG_LINE.match(line)]


def node(host: str, vcpus: int = 4, memory_mb: int = 4096,
         local_gb: int = 100, zone: str = "az1",
         cpu_ratio: float = 1.0, ram_ratio: float = 1.0) -> fleet.Node:
    """A compute node of exact size, for capacity-exact tests."""
    return fleet.Node(host=host, vcpus=vcpus, memory_mb=memory_mb,
                      local_gb=local_gb, cpu_allocation_ratio=cpu_ratio,
                      ram_allocation_ratio=ram_ratio, zone=zone,
                      host_ip="192.0.2.1")


def freeze(server) -> None:
    """SIGSTOP the database server, every process of it. The kernel still
    accepts and ACKs: the database stops answering without closing
    anything, as a frozen host or a partition that drops packets."""
    for pid in server.pids():
        os.kill(pid, signal.SIGSTOP)


def thaw(server) -> None:
    for pid in server.pids():
        os.kill(pid, signal.SIGCONT)
