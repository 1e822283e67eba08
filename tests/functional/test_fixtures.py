"""Checks that the real-server fixtures give working RabbitMQ (one node, and
a cluster whose quorum queues survive a node's crash), PostgreSQL and
MariaDB."""

from __future__ import annotations

import importlib
import time
import uuid
from typing import Any, Iterator, Optional

import oslo_messaging
import oslo_messaging.opts
import pytest
import sqlalchemy
from oslo_config import cfg

from tests.fixtures import _net, availability
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer
from tests.fixtures.rabbitmq_cluster import RabbitMQCluster


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

    def __init__(self, transport_url: str,
                 rabbit_options: Optional[dict[str, Any]] = None) -> None:
        """``rabbit_options``: ``[oslo_messaging_rabbit]`` settings."""
        # A private ConfigOpts keeps driver options out of the global CONF.
        self.conf = cfg.ConfigOpts()
        self.conf([], project="schedtest-fixtures", default_config_files=[],
                  default_config_dirs=[])
        _register_global_only_opts(self.conf)
        # Registered ahead of the driver, which would register them itself,
        # so that they can be set before any connection reads them.
        for group, opts in oslo_messaging.opts.list_opts():
            if group == "oslo_messaging_rabbit":
                self.conf.register_opts(opts, group=group)
        for name, value in (rabbit_options or {}).items():
            self.conf.set_override(name, value, group="oslo_messaging_rabbit")
        self.transport = oslo_messaging.get_rpc_transport(self.conf, url=transport_url)
        self.topic = topic = f"schedtest-echo-{uuid.uuid4().hex[:8]}"
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

    def call_until_answered(self, value: Any, within: float) -> Any:
        """Call until a call is answered; re-raise the last error after
        ``within`` seconds.  After a broker restart or failover, server
        and client reconnect with oslo.messaging's own back-off, so the
        first calls may be lost and time out."""
        deadline = time.monotonic() + within
        while True:
            try:
                return self.call(value, timeout=5)
            except oslo_messaging.MessagingException:
                if time.monotonic() > deadline:
                    raise

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
    assert rpc.call_until_answered("after", within=90) == "after"


def _leader_other_than(cluster: RabbitMQCluster, queue: str, old: int,
                       within: float) -> int:
    """The leader of quorum ``queue`` once it is no longer node ``old``."""
    deadline = time.monotonic() + within
    while True:
        try:
            leader = cluster.leader_of(queue)
        except RabbitMQCluster.Error:  # no leader while the survivors vote
            if time.monotonic() > deadline:
                raise
        else:
            if leader != old:
                return leader
            assert time.monotonic() < deadline, f"node {old} still leads {queue}"
        time.sleep(0.2)


def test_rabbitmq_cluster_rpc_survives_the_quorum_leader_killed() -> None:
    # 127.0.0.2: a loopback address that is not the distribution's, so
    # the AMQP listeners are seen to take the address they are given.
    cluster = RabbitMQCluster(address="127.0.0.2")
    reason = cluster.unavailable_reason()
    if reason:
        availability.require("RabbitMQ cluster", reason)
    cluster.start()
    nodes = list(cluster.nodes)
    dirs = [node.base_dir for node in nodes]
    rpc = None
    try:
        assert cluster.running_nodes() == [0, 1, 2]
        for node in nodes:
            assert _listen_addresses(node.port) == {"127.0.0.2"}
            assert _listen_addresses(node.dist_port) == {"127.0.0.1"}
        rpc = RpcPair(cluster.transport_url,
                      rabbit_options={"rabbit_quorum_queue": True})
        assert rpc.call("before") == "before"
        queues = cluster.queues()
        assert queues[rpc.topic] == "quorum"
        assert queues[f"{rpc.topic}.echo-1"] == "quorum"
        # Reply and fanout queues are transient: quorum only with
        # rabbit_transient_quorum_queue.
        transient = {name: kind for name, kind in queues.items()
                     if name.startswith(("reply_", f"{rpc.topic}_fanout_"))}
        assert sorted(transient.values()) == ["classic", "classic"], transient

        leader = cluster.leader_of(rpc.topic)
        cluster.kill(leader)
        _leader_other_than(cluster, rpc.topic, leader, within=60)
        assert rpc.call_until_answered("after the kill", within=120) == "after the kill"

        cluster.start_node(leader)
        assert cluster.running_nodes() == [0, 1, 2]
        assert rpc.call_until_answered("rejoined", within=60) == "rejoined"
    finally:
        if rpc is not None:
            rpc.close()
        cluster.stop()
    assert not any(d is None or d.exists() for d in dirs)
    for node in nodes:
        assert not node.is_running
        assert not _net.port_open(node.port, "127.0.0.2")
    assert not _net.port_open(nodes[0].epmd_port)
    cluster.stop()                # idempotent


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
