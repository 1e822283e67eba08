"""Fixtures of the unit tests: a real SQLite database
file in the test's tmp_path with the migrated schema (no DB mocks)."""
from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from scheduler.sim import fleet
from scheduler.db.engine import create_engine
from scheduler.db import migration
from scheduler.hosts.manager import HostManager


@pytest.fixture
def oslo_log_lines() -> Iterator[Callable[[str], list[str]]]:
    """``oslo_log_lines(logger)``: the lines ``logger`` logs from now on
    (at any level), as oslo.log's formatter writes them: with the
    exception in flight appended to a WARNING or worse logged inside an
    except clause, as in a real log."""
    import logging

    from oslo_config import cfg
    from oslo_log import formatters
    from oslo_log import log

    options = cfg.ConfigOpts()
    log.register_options(options)
    options([], default_config_files=[])
    attached: list[tuple[logging.Logger, logging.Handler, int]] = []

    class Keep(logging.Handler):
        def __init__(self, lines: list[str]) -> None:
            super().__init__()
            self.lines = lines
            self.setFormatter(formatters.ContextFormatter(config=options))

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(self.format(record))

    def lines_of(name: str) -> list[str]:
        lines: list[str] = []
        logger = logging.getLogger(name)
        handler = Keep(lines)
        attached.append((logger, handler, logger.level))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        return lines
    yield lines_of
    for logger, handler, level in attached:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def engine(conf, tmp_path) -> Iterator[sa.Engine]:
    engine = create_engine(conf)
    assert engine.url.database == str(tmp_path / "scheduler.sqlite")
    migration.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def sqlite_statements(engine) -> Iterator[list[str]]:
    """Every statement SQLite runs on ``engine``'s connections checked out
    from now on, as its driver sees them: also those read from the
    driver's own cursor (``Compiled.rows``), which SQLAlchemy's events do
    not see."""
    sent: list[str] = []

    def trace(dbapi_connection, record, proxy):
        dbapi_connection.set_trace_callback(sent.append)
    sa.event.listen(engine, "checkout", trace)
    yield sent
    sa.event.remove(engine, "checkout", trace)


@pytest.fixture
def register(engine) -> Callable[..., list[fleet.Node]]:
    """``register(*nodes)``: put fleet nodes in the database."""
    def _register(*nodes: fleet.Node) -> list[fleet.Node]:
        assert fleet.register(engine, list(nodes)) == len(nodes)
        return list(nodes)
    return _register


@pytest.fixture
def random_fleet(engine) -> list[fleet.Node]:
    """Five nodes of the seeded random fleet."""
    nodes = fleet.make_nodes(5, seed=42)
    fleet.register(engine, nodes)
    return nodes


@pytest.fixture
def host_manager(conf, engine) -> HostManager:
    return fresh_host_manager(conf, engine)


def fresh_host_manager(conf, engine) -> HostManager:
    """A HostManager that reads liveness on every refresh (tests change
    heartbeats and look at once; the service reads at most every second)."""
    manager = HostManager(conf, engine)
    manager.liveness_interval = 0
    return manager
