"""Session-wide fixtures that start real servers on 127.0.0.1.

Each server is started once per test session; tests that need isolation
should make their own databases/vhost-level names rather than restart it.
If a server cannot be started the requesting test is skipped, or failed
under ``CI=true`` (see ``tests.fixtures.availability.require``).
"""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.fixtures.availability import require
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[RabbitMQServer]:
    """A started private RabbitMQ broker; stopped and wiped after the session."""
    why = RabbitMQServer.unavailable_reason()
    if why:
        require("RabbitMQ", why)
    server = RabbitMQServer()
    try:
        server.start()
    except Exception as exc:  # start() already cleaned up after itself
        require("RabbitMQ", f"could not start: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgresql() -> Iterator[PostgreSQLServer]:
    """A started private PostgreSQL cluster; stopped and wiped after the session."""
    why = PostgreSQLServer.unavailable_reason()
    if why:
        require("PostgreSQL", why)
    server = PostgreSQLServer()
    try:
        server.start()
    except Exception as exc:  # start() already cleaned up after itself
        require("PostgreSQL", f"could not start: {exc}")
    try:
        yield server
    finally:
        server.stop()
