"""The service's engine follows a PostgreSQL failover by itself: its
``[database] connection`` names a primary and a synchronous standby
(:class:`tests.fixtures.postgres_standby.PostgreSQLPair`); the primary is
killed, the standby promoted, and the same engine — its pool still
holding connections to the dead primary — writes again, and finds what was
committed before the kill."""

from __future__ import annotations

import time
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
from tests.fixtures.postgres import STANDBY_NAME
from tests.fixtures.postgres_standby import PostgreSQLPair

#: Seconds from the kill until the engine must write on the promoted
#: standby: it took 0.16-0.35 s with the promotion issued at once.
FAILOVER_BOUND = 30


def _hosts(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.scalars(sa.select(models.compute_nodes.c.host)))


def test_the_engine_writes_on_the_promoted_standby(postgres: PostgreSQLPair,
                                                   tmp_path: Path) -> None:
    config = write_config(tmp_path, {"state_path": tmp_path,
                                     "database.connection": postgres.url})
    engine = create_engine(sched_conf.load(["--config-file", str(config)]))
    try:
        migration.upgrade(engine)
        before, after = fleet.make_nodes(2)
        fleet.register(engine, [before])
        with engine.connect() as conn:
            # The session the service writes in waits for the standby.
            assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "on"
        assert postgres.primary.execute(
            "SELECT sync_state FROM pg_stat_replication"
            " WHERE application_name = %s", [STANDBY_NAME]) == [("sync",)]
        # Connections to the primary in the pool when it dies, as a busy
        # service has.
        held = [engine.connect() for _ in range(3)]
        for conn in held:
            conn.exec_driver_sql("SELECT 1")
            conn.close()

        killed = time.monotonic()
        postgres.kill_primary()
        # No server takes writes until the promotion: the write fails at
        # once with an error the service's retries wait out.
        with pytest.raises(sa.exc.OperationalError) as refused:
            fleet.register(engine, [after])
        assert retry.is_away(refused.value)
        postgres.promote()

        errors: list[Exception] = []
        while True:
            try:
                fleet.register(engine, [after])
                break
            except Exception as exc:
                assert retry.is_away(exc), exc
                errors.append(exc)
                assert time.monotonic() - killed < FAILOVER_BOUND, errors
                time.sleep(0.05)
        assert _hosts(engine) == {before.host, after.host}
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT inet_server_port()").scalar() == \
                postgres.standby.port
    finally:
        engine.dispose()
