"""Session-wide fixtures that start real servers on 127.0.0.1.

Each server is started once per test session; tests that need isolation
should make their own databases/vhost-level names rather than restart it.
If a server cannot be started the requesting test is skipped, or failed
under ``CI=true`` (see ``tests.fixtures.availability.require``).
"""

from __future__ import annotations

from typing import Iterator

import pytest

import scheduler.conf
from tests.fixtures.availability import require
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer


@pytest.fixture
def conf(tmp_path):
    """The service's options, no file read, ``state_path`` the test's
    own directory."""
    conf = scheduler.conf.new_conf()
    conf([], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    return conf


#: The session fixture of each database server, by ``database_url`` param.
DATABASE_SERVERS = {"postgresql": "postgresql", "mysql": "mariadb"}


def database_of(item: pytest.Item) -> str:
    """The database a collected test runs on: its ``database_url`` param,
    else the database server it asks for, else ``sqlite`` (SQLite, or no
    database at all)."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "database_url" in callspec.params:
        return callspec.params["database_url"]
    return next((kind for kind, server in DATABASE_SERVERS.items()
                 if server in item.fixturenames), "sqlite")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its database, so that ``-m postgresql`` runs
    one phase of the suite (``tools/run-tests`` runs them one by one)."""
    for item in items:
        item.add_marker(database_of(item))


def started(component: str, server) -> Iterator:
    """``server`` (a fixture's server: ``unavailable_reason``, ``start``,
    ``stop``) started, stopped and wiped afterwards; if it cannot start,
    ``require`` fails the test under CI and skips it elsewhere."""
    why = server.unavailable_reason()
    if why:
        require(component, why)
    try:
        server.start()
    except Exception as exc:  # start() already cleaned up after itself
        require(component, f"could not start: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[RabbitMQServer]:
    """A started private RabbitMQ broker for the session."""
    yield from started("RabbitMQ", RabbitMQServer())


@pytest.fixture(scope="session")
def postgresql() -> Iterator[PostgreSQLServer]:
    """A started private PostgreSQL cluster for the session."""
    yield from started("PostgreSQL", PostgreSQLServer())


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDBServer]:
    """A started private MariaDB server for the session."""
    yield from started("MariaDB", MariaDBServer())
