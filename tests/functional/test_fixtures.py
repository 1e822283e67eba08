"""Checks that the real-server fixtures give working RabbitMQ, PostgreSQL
and MariaDB (the clusters of several machines: tests/machines)."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
import sqlalchemy

from tests.fixtures import availability
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer
from tests.fixtures.rpc_pair import RpcPair
from tests.fixtures.rpc_pair import listen_addresses


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



def test_rabbitmq_listens_on_loopback_only(rabbitmq: RabbitMQServer) -> None:
    assert listen_addresses(rabbitmq.port) == {"127.0.0.1"}
    assert listen_addresses(rabbitmq.dist_port) == {"127.0.0.1"}
    # epmd always adds ::1 as well; that is still loopback.
    assert listen_addresses(rabbitmq.epmd_port) <= {
        "127.0.0.1", "00000000000000000000000001000000"}


def test_rabbitmq_rpc_round_trip(rpc: RpcPair) -> None:
    assert rpc.call({"hello": ["world", 1]}) == {"hello": ["world", 1]}


def test_rabbitmq_restart_then_rpc_works(rabbitmq: RabbitMQServer, rpc: RpcPair) -> None:
    assert rpc.call("before") == "before"
    port = rabbitmq.port
    rabbitmq.restart()
    assert rabbitmq.port == port
    assert rpc.call_until_answered("after", within=90) == "after"


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
    assert listen_addresses(postgresql.port) == {"127.0.0.1"}


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
    assert listen_addresses(mariadb.port) == {"127.0.0.1"}


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
