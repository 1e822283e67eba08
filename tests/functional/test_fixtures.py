"""Checks that the real-server fixtures give working RabbitMQ, PostgreSQL and
MariaDB."""

from __future__ import annotations

import importlib
import time
import uuid
from typing import Any, Iterator

import oslo_messaging
import pytest
import sqlalchemy
from oslo_config import cfg

from tests.fixtures import availability
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer


def _register_global_only_opts(conf: cfg.ConfigOpts) -> None:
    """Register oslo.messaging option groups it only puts on the global CONF.

    oslo.messaging 18.x registers ``[oslo_messaging_tracing]`` and
    ``[oslo_messaging_metrics]`` on ``cfg.CONF`` at import time but reads
    them from the conf it is handed, so RPC on a private ``ConfigOpts``
    raises NoSuchOptError without this.  (Its ConfFixture does the same,
    but needs the ``fixtures`` package.)  Missing modules are ignored so
    other releases work too.
    """
    for module, group in (
        ("oslo_messaging._tracing.client", "oslo_messaging_tracing"),
        ("oslo_messaging._metrics.client", "oslo_messaging_metrics"),
    ):
        try:
            opts = getattr(importlib.import_module(module), group)
        except (ImportError, AttributeError):
            continue
        conf.register_opts(opts, group=group)


class EchoEndpoint:
    """Minimal RPC endpoint: returns what it is given."""

    def echo(self, ctxt: dict[str, Any], value: Any) -> Any:
        return value


class RpcPair:
    """An oslo.messaging RPC server (threading executor) plus a client to it."""

    def __init__(self, transport_url: str) -> None:
        # A private ConfigOpts keeps driver options out of the global CONF.
        self.conf = cfg.ConfigOpts()
        self.conf([], project="schedtest-fixtures", default_config_files=[],
                  default_config_dirs=[])
        _register_global_only_opts(self.conf)
        self.transport = oslo_messaging.get_rpc_transport(self.conf, url=transport_url)
        topic = f"schedtest-echo-{uuid.uuid4().hex[:8]}"
        self.server = oslo_messaging.get_rpc_server(
            self.transport,
            oslo_messaging.Target(topic=topic, server="echo-1"),
            [EchoEndpoint()],
            executor="threading",
            access_policy=oslo_messaging.DefaultRPCAccessPolicy,
        )
        self.client = oslo_messaging.get_rpc_client(
            self.transport, oslo_messaging.Target(topic=topic)
        )
        self.server.start()

    def call(self, value: Any, timeout: float = 10) -> Any:
        return self.client.prepare(timeout=timeout).call({}, "echo", value=value)

    def close(self) -> None:
        self.server.stop()
        self.server.wait()
        self.transport.cleanup()


@pytest.fixture
def rpc(rabbitmq: RabbitMQServer) -> Iterator[RpcPair]:
    pair = RpcPair(rabbitmq.transport_url)
    try:
        yield pair
    finally:
        pair.close()


# -- RabbitMQ -------------------------------------------------------------


def test_rabbitmq_has_private_user_not_guest(rabbitmq: RabbitMQServer) -> None:
    assert rabbitmq.transport_url == (
        f"rabbit://scheduler:{rabbitmq.password}@127.0.0.1:{rabbitmq.port}/"
    )
    assert rabbitmq.node == f"schedtest-{rabbitmq.port}@localhost"
    users = rabbitmq.rabbitmqctl("-q", "list_users")
    assert "scheduler" in users
    assert "guest" not in users



def _listen_addresses(port: int) -> set[str]:
    """Local addresses with a TCP socket in LISTEN state on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                local, state = line.split()[1], line.split()[3]
                addr, hexport = local.split(":")
                if state == "0A" and int(hexport, 16) == port:
                    if len(addr) == 8:
                        found.add(".".join(str(b) for b in bytes.fromhex(addr)[::-1]))
                    else:
                        found.add(addr)
    return found


def test_rabbitmq_listens_on_loopback_only(rabbitmq: RabbitMQServer) -> None:
    assert _listen_addresses(rabbitmq.port) == {"127.0.0.1"}
    assert _listen_addresses(rabbitmq.dist_port) == {"127.0.0.1"}
    # epmd always adds ::1 as well; that is still loopback.
    assert _listen_addresses(rabbitmq.epmd_port) <= {
        "127.0.0.1", "00000000000000000000000001000000"}


def test_rabbitmq_rpc_round_trip(rpc: RpcPair) -> None:
    assert rpc.call({"hello": ["world", 1]}) == {"hello": ["world", 1]}


def test_rabbitmq_restart_then_rpc_works(rabbitmq: RabbitMQServer, rpc: RpcPair) -> None:
    assert rpc.call("before") == "before"
    port = rabbitmq.port
    rabbitmq.restart()
    assert rabbitmq.port == port
    # Server and client reconnect with oslo.messaging's own back-off, so the
    # first calls after the restart may time out.
    deadline = time.monotonic() + 90
    while True:
        try:
            assert rpc.call("after", timeout=5) == "after"
            break
        except oslo_messaging.MessagingException:
            if time.monotonic() > deadline:
                raise


# -- PostgreSQL -------------------------------------------------------------


def _scalar(url: str, sql: str) -> Any:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sqlalchemy.text(sql)).scalar()
    finally:
        engine.dispose()


def test_postgresql_select_one(postgresql: PostgreSQLServer) -> None:
    assert postgresql.url.startswith("postgresql+psycopg2://scheduler:")
    assert _scalar(postgresql.url, "select 1") == 1
    assert _scalar(postgresql.url, "select current_user") == "scheduler"
    assert _listen_addresses(postgresql.port) == {"127.0.0.1"}


def test_postgresql_create_database(postgresql: PostgreSQLServer) -> None:
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = postgresql.create_database(name)
    try:
        assert url == postgresql.url_for(name)
        assert _scalar(url, "select current_database()") == name
    finally:
        postgresql.drop_database(name)


def test_postgresql_restart_keeps_data(postgresql: PostgreSQLServer) -> None:
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = postgresql.create_database(name)
    try:
        port = postgresql.port
        postgresql.restart()
        assert postgresql.port == port
        assert _scalar(url, "select current_database()") == name
    finally:
        postgresql.drop_database(name)


# -- MariaDB ----------------------------------------------------------------


def test_mariadb_select_one(mariadb: MariaDBServer) -> None:
    assert mariadb.url.startswith("mysql+pymysql://scheduler:")
    assert _scalar(mariadb.url, "select 1") == 1
    assert _scalar(mariadb.url, "select current_user()") == "scheduler@127.0.0.1"
    assert _scalar(mariadb.url, "select @@character_set_database") == "utf8mb4"
    assert _listen_addresses(mariadb.port) == {"127.0.0.1"}


def test_mariadb_is_the_debian_server_with_innodb(mariadb: MariaDBServer) -> None:
    assert "MariaDB" in _scalar(mariadb.url, "select version()")
    assert _scalar(mariadb.url, "select @@default_storage_engine") == "InnoDB"


def test_mariadb_create_database(mariadb: MariaDBServer) -> None:
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = mariadb.create_database(name)
    try:
        assert url == mariadb.url_for(name)
        assert _scalar(url, "select database()") == name
    finally:
        mariadb.drop_database(name)
    assert (name,) not in mariadb.execute("SHOW DATABASES")


def test_mariadb_restart_keeps_data(mariadb: MariaDBServer) -> None:
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = mariadb.create_database(name)
    try:
        engine = sqlalchemy.create_engine(url)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE kept (id INT PRIMARY KEY)")
            conn.exec_driver_sql("INSERT INTO kept VALUES (7)")
        engine.dispose()
        port = mariadb.port
        mariadb.restart()
        assert mariadb.port == port
        assert _scalar(url, "select id from kept") == 7
    finally:
        mariadb.drop_database(name)


def _amqp_login(server: RabbitMQServer) -> bool:
    import kombu

    with kombu.Connection(server.transport_url.replace("rabbit://", "amqp://"),
                          connect_timeout=10) as conn:
        conn.connect()
        return conn.connected


# The life cycle all three share (tests/fixtures/_loopback.py).
@pytest.mark.parametrize("make,answers", [
    (PostgreSQLServer, lambda s: _scalar(s.url, "select 1") == 1),
    (MariaDBServer, lambda s: _scalar(s.url, "select 1") == 1),
    (RabbitMQServer, _amqp_login),
], ids=["postgresql", "mariadb", "rabbitmq"])
def test_a_server_recovers_after_kill_and_stop_leaves_nothing(make, answers
                                                              ) -> None:
    server = make()
    reason = server.unavailable_reason()
    if reason:
        availability.require(make.__name__, reason)
    server.start()
    try:
        base, port = server.base_dir, server.port
        assert base is not None and base.exists()
        server.kill()
        assert not server.is_running
        server.start()            # crash recovery, same data and port
        assert server.port == port
        assert answers(server)
        with pytest.raises(make.Error, match="already running"):
            server.start()
    finally:
        server.stop()
    assert not base.exists()
    assert not server.is_running
    server.stop()                 # idempotent


# -- availability policy ------------------------------------------------------


@pytest.mark.parametrize("ci", ["true", "TRUE", "True"])
def test_require_fails_under_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="RabbitMQ.*no binary"):
        availability.require("RabbitMQ", "no binary")


@pytest.mark.parametrize("ci", [None, "", "false", "1"])
def test_require_skips_outside_ci(monkeypatch: pytest.MonkeyPatch, ci: str | None) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL.*no initdb"):
        availability.require("PostgreSQL", "no initdb")
