"""The several-machine test bed (``tests/fixtures/testbed.py``): three
machines as network namespaces, a three-node RabbitMQ cluster with quorum
queues, and the database a test asks for: PostgreSQL with a synchronous
standby, or a three-node Galera cluster behind HAProxy with one writer.

These tests run in a phase of their own (``tools/run-tests``, "several
machines"): each starts a dozen servers and loads both CPUs, so they run
one at a time, after the functional phases.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures import faults
from tests.conftest import started
from tests.fixtures.galera import GaleraCluster
from tests.fixtures.netns import Network
from tests.fixtures.postgres_standby import PostgreSQLPair
from tests.fixtures.rabbitmq_cluster import RabbitMQCluster
from tests.fixtures.testbed import TestBed
from tests.fixtures.testbed import fleet_nodes

#: The fleet every fault runs on: 24 nodes of 8 places, 192 in all, of
#: which the callers hold about 60 (tests.fixtures.load.Load's ``live``).
NODES = 24


#: The rows of the faults run in this session, printed at its end.
FAULTS: list[dict[str, object]] = []


def pytest_terminal_summary(terminalreporter) -> None:
    """The fault table of the faults run (what each cost), for CI's log."""
    if FAULTS:
        terminalreporter.section("several machines: what each fault cost")
        terminalreporter.write_line(faults.table(FAULTS))


@pytest.fixture(scope="session")
def network() -> Iterator[Network]:
    """Three machines on a bridge, for the whole phase."""
    yield from started("network namespaces", Network(3))


@pytest.fixture(scope="session")
def rabbit(network) -> Iterator[RabbitMQCluster]:
    """The RabbitMQ cluster every test shares: a test that kills a node
    starts it again."""
    yield from started("a RabbitMQ cluster",
                        RabbitMQCluster(address=network.address))


@pytest.fixture
def postgres(network) -> Iterator[PostgreSQLPair]:
    """A PostgreSQL primary with a synchronous standby, for one test."""
    yield from started("PostgreSQL with a standby",
                        PostgreSQLPair(address=network.address))


@pytest.fixture
def galera(network) -> Iterator[GaleraCluster]:
    """A Galera cluster with one writer behind HAProxy, for one test."""
    yield from started("a Galera cluster",
                        GaleraCluster(address=network.address))


def _bed(tmp_path, network, rabbit, url) -> Iterator[TestBed]:
    bed = TestBed(tmp_path / "bed", network, rabbit.transport_url, url)
    try:
        bed.prepare(fleet_nodes(NODES))
        bed.start()
        yield bed
    finally:
        bed.stop()


@pytest.fixture
def bed(tmp_path, network, rabbit, postgres) -> Iterator[TestBed]:
    """Three schedulers of two workers each on PostgreSQL."""
    yield from _bed(tmp_path, network, rabbit, postgres.url)


@pytest.fixture
def galera_bed(tmp_path, network, rabbit, galera) -> Iterator[TestBed]:
    """Three schedulers of two workers each on Galera."""
    yield from _bed(tmp_path, network, rabbit, galera.url)
