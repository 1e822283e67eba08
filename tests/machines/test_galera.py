"""The scheduler on a Galera cluster with one writer behind HAProxy
(tests/fixtures/galera.py): its schema fits Galera, and its engine writes
again, with nothing committed lost, once the writer has been killed.
The cluster is the phase's (tests/machines/conftest.py), on the bridge's
address, fresh for this test: it kills a node."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from scheduler import conf as sched_conf
from scheduler.db import migration
from scheduler.db import models
from scheduler.db import retry
from scheduler.db.engine import create_engine
from scheduler.sim import fleet
from tests.fixtures.config import write_config
from tests.fixtures.galera import GaleraCluster
from tests.fixtures.galera import GaleraNode
from tests.functional.waits import wait_until

#: What a failover may take: ``[scheduler] db_outage_timeout``'s default,
#: the time the service goes on retrying a database it cannot reach.
FAILOVER_BOUND = 30


@pytest.fixture
def engine(galera: GaleraCluster, tmp_path: Path) -> Iterator[sa.Engine]:
    """The engine the service makes from a config naming HAProxy's URL."""
    config_file = write_config(tmp_path, {
        "state_path": tmp_path, "database.connection": galera.url})
    engine = create_engine(sched_conf.load(["--config-file",
                                            str(config_file)]))
    try:
        yield engine
    finally:
        engine.dispose()


def _serving_node(engine: sa.Engine) -> str:
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT @@wsrep_node_name").scalar()


def _hosts(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(sa.select(models.services.c.host)).scalars())


def _tables_unfit_for_galera(node: GaleraNode) -> list[str]:
    """Tables of the scheduler's database that are not InnoDB or have no
    primary key, read on ``node``.  Galera replicates InnoDB tables alone,
    and certifies a row by its primary key: a table without one gets a key
    made of the whole row (wsrep_certify_nonPK), slow and prone to false
    conflicts."""
    return [f"{name} ({engine})" for name, engine in node.execute(
        "SELECT t.table_name, t.engine FROM information_schema.tables t"
        " WHERE t.table_schema = %s AND t.table_type = 'BASE TABLE'"
        " AND (t.engine <> 'InnoDB' OR NOT EXISTS ("
        "  SELECT 1 FROM information_schema.table_constraints c"
        "  WHERE c.table_schema = t.table_schema"
        "  AND c.table_name = t.table_name"
        "  AND c.constraint_type = 'PRIMARY KEY'))", [node.dbname])]


def _services(node: GaleraNode) -> list[tuple[str, int]]:
    """(host, report_count) of every service, read on ``node``."""
    return node.execute(f"SELECT host, report_count FROM `{node.dbname}`"
                        ".services ORDER BY host")


def test_failover_to_a_backup_loses_nothing(galera: GaleraCluster,
                                            engine: sa.Engine) -> None:
    # The schema made through HAProxy, on node 1; read on node 3, where
    # its DDL was replicated.
    migration.upgrade(engine)
    assert "compute_nodes" in {name for (name,) in galera.node(3).execute(
        f"SHOW TABLES FROM `{galera.node(3).dbname}`")}
    assert _tables_unfit_for_galera(galera.node(3)) == []

    fleet.register(engine, fleet.make_nodes(1, first=1))
    assert galera.writer() == 1
    assert _serving_node(engine) == "node1"

    assert galera.kill_writer() == 1
    killed = time.monotonic()
    errors: list[Exception] = []

    def register_second() -> bool:
        try:
            fleet.register(engine, fleet.make_nodes(1, first=2))
        except Exception as exc:    # noqa: BLE001 - each one is looked at
            errors.append(exc)
            return False
        return True

    wait_until(register_second, "a write through HAProxy after the writer "
               "was killed", timeout=FAILOVER_BOUND)
    took = time.monotonic() - killed
    print(f"written again {took:.1f} s after the writer was killed; "
          f"errors meanwhile: {[str(e).splitlines()[0] for e in errors]}")
    # Every error on the way is one the service retries, for
    # db_outage_timeout (a lost or refused connection) or db_retries (a
    # deadlock, as a certification failure arrives).
    assert [e for e in errors
            if not (retry.is_away(e) or retry.is_transient(e))] == []
    assert galera.writer() == 2
    assert _serving_node(engine) == "node2"
    # The row committed before the kill had reached the other nodes.
    assert _hosts(engine) == {"compute-00001", "compute-00002"}

    # The old writer rejoins by an IST of what it missed, and takes no
    # writes back: the engine stays on node 2.
    started = time.monotonic()
    galera.start_node(1)
    galera.wait_for_size(3)
    print(f"node 1 rejoined in {time.monotonic() - started:.1f} s")
    assert "rsync IST completed on joiner" in \
        galera.node(1).log_file.read_text(errors="replace")
    assert fleet.heartbeat(engine, ["compute-00001"]) == 1
    assert galera.writer() == 2
    assert _serving_node(engine) == "node2"
    # Node 1 applies the heartbeat a moment after node 2 commits it.
    wait_until(lambda: _services(galera.node(1)) == _services(galera.node(2)),
               "node 1 has every service row as node 2 has it")

    # stop() ends every process, the rejoined one too, and deletes every
    # directory; it can be called again.
    assert galera.haproxy is not None
    dirs = [node.base_dir for node in galera.nodes] + [galera.haproxy.base_dir]
    pids = [pid for node in galera.nodes for pid in node.pids()] + \
        galera.haproxy.pids()
    galera.stop()
    assert [d for d in dirs if d is not None and d.exists()] == []
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []
    galera.stop()
