"""Transient errors of the database servers, caused for real, arrive as
oslo.db raises them and are retried: a deadlock between two connections, a
lock wait that times out (MariaDB), a connection the server killed."""
from __future__ import annotations

import threading

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.hosts.planned import Claim
from scheduler.sim import fleet
from scheduler.claims.batch import ClaimBatcher
from scheduler.db import models
from scheduler.db import retry
from scheduler.hosts.manager import HostManager
from tests.functional.conftest import node

SERVERS = pytest.mark.databases("postgresql", "mysql")
groups = models.claim_groups


@pytest.fixture
def engine(engine):
    """Claim_groups rows "a" and "b" to fight over."""
    with engine.begin() as conn:
        conn.execute(groups.insert(), [{"uuid": "a", "generation": 0},
                                       {"uuid": "b", "generation": 0}])
    return engine


def _bump(conn: sa.Connection, uuid: str) -> None:
    conn.execute(groups.update().where(groups.c.uuid == uuid)
                 .values(generation=groups.c.generation + 1))


def _generations(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(conn.execute(sa.select(groups.c.uuid,
                                           groups.c.generation)).all())


def _backend_id(conn: sa.Connection) -> int:
    if conn.dialect.name == "mysql":
        return conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar()
    return conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()


def _kill(engine: sa.Engine, backend_id: int) -> None:
    """End another session from the server's side."""
    with engine.connect() as conn:
        if conn.dialect.name == "mysql":
            conn.exec_driver_sql(f"KILL CONNECTION {int(backend_id)}")
        else:
            conn.exec_driver_sql(
                f"SELECT pg_terminate_backend({int(backend_id)})")
        conn.commit()


@SERVERS
def test_a_real_deadlock_is_a_dbdeadlock_and_retrying_completes_both(
        engine):
    """Two transactions lock "a" and "b" in opposite orders: the server
    picks one as the deadlock victim, oslo.db raises DBDeadlock (1213 on
    MariaDB, 40P01 on PostgreSQL), and the retried transaction then
    commits, so both writes land exactly once."""
    both_hold_one = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    def transaction(first: str, second: str) -> None:
        attempt = 0

        @retry.retrying(3)
        def work() -> None:
            nonlocal attempt
            attempt += 1
            try:
                with engine.begin() as conn:
                    _bump(conn, first)
                    if attempt == 1:
                        both_hold_one.wait()
                    _bump(conn, second)
            except Exception as exc:
                errors.append(exc)
                raise
        work()

    threads = [threading.Thread(target=transaction, args=order)
               for order in (("a", "b"), ("b", "a"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads)
    assert len(errors) == 1, errors
    assert isinstance(errors[0], db_exc.DBDeadlock)
    assert retry.is_transient(errors[0])
    assert _generations(engine) == {"a": 2, "b": 2}


@pytest.mark.databases("mysql")
def test_a_lock_wait_timeout_is_transient_and_nothing_half_done(engine):
    """MariaDB error 1205: oslo.db raises DBDeadlock; InnoDB rolls back only
    the statement, but the whole transaction is given up, so its first
    write is not kept either."""
    with engine.connect() as holder:
        holder.begin()
        _bump(holder, "b")
        with pytest.raises(db_exc.DBDeadlock) as info:
            with engine.begin() as conn:
                conn.exec_driver_sql("SET SESSION innodb_lock_wait_timeout=1")
                _bump(conn, "a")
                _bump(conn, "b")
        assert "1205" in str(info.value)
        holder.commit()
    assert retry.is_transient(info.value)
    assert _generations(engine) == {"a": 0, "b": 1}


@SERVERS
def test_a_killed_connection_is_a_dbconnectionerror_and_retried(engine):
    """The server ends our session mid-transaction (an admin's KILL, a
    restart, a Galera node leaving): oslo.db raises DBConnectionError and
    the retry runs the transaction again on a fresh connection."""
    errors: list[BaseException] = []
    attempts = []

    @retry.retrying(3)
    def work() -> None:
        attempts.append(1)
        try:
            with engine.begin() as conn:
                _bump(conn, "a")
                if len(attempts) == 1:
                    _kill(engine, _backend_id(conn))
                _bump(conn, "b")
        except Exception as exc:
            errors.append(exc)
            raise

    work()
    assert len(attempts) == 2
    assert [type(e) for e in errors] == [db_exc.DBConnectionError]
    assert retry.is_transient(errors[0])
    assert _generations(engine) == {"a": 1, "b": 1}


def _end_other_sessions(engine: sa.Engine) -> None:
    """What a restart or an admin does to every session of the database
    but the caller's."""
    with engine.connect() as conn:
        if conn.dialect.name == "mysql":
            for (backend_id,) in conn.exec_driver_sql(
                    "SELECT id FROM information_schema.processlist "
                    "WHERE db = DATABASE() AND id <> CONNECTION_ID()"):
                conn.exec_driver_sql(f"KILL CONNECTION {int(backend_id)}")
        else:
            conn.exec_driver_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()")
        conn.commit()


@SERVERS
def test_refreshes_carry_on_after_the_server_ends_their_connection(
        engine, conf):
    """A host manager keeps its connection between refreshes, unpinged.
    When the server ends it, the next refresh runs on a new connection
    and misses nothing: it reads every node (the database on the other
    end may not be the one the table was read from), then again only
    what changed."""
    fleet.register(engine, [node("h1"), node("h2")])
    host_manager = HostManager(conf, engine)
    assert host_manager.refresh() == 2
    nodes = models.compute_nodes
    for used in (512, 1024):
        _end_other_sessions(engine)
        with engine.begin() as conn:
            conn.execute(nodes.update().where(nodes.c.host == "h1")
                         .values(memory_mb_used=used))
        assert host_manager.refresh() == 2
        states = {s.host: s for s in host_manager.cached_table().states}
        assert states["h1"].memory_mb_used == used
    with engine.begin() as conn:
        conn.execute(nodes.update().where(nodes.c.host == "h2")
                     .values(memory_mb_used=256))
    assert host_manager.refresh() == 1
    host_manager.close()


@SERVERS
def test_claims_carry_on_after_the_server_ends_their_connection(engine):
    """Claims keep their connection between transactions, unpinged. When
    the server ends it, the next claim runs on a new connection, and every
    claim is recorded once."""
    fleet.register(engine, [node("h1")])
    batcher = ClaimBatcher(engine, max_batch=16)
    nodes = models.compute_nodes
    for i in range(3):
        with engine.connect() as conn:
            row = conn.execute(sa.select(nodes)).one()
        _end_other_sessions(engine)
        batcher.claim([Claim(
            consumer_uuid=f"cccccccc-0000-4000-8000-{i:012d}",
            node_id=row.id, host="h1", generation=row.generation, vcpus=1,
            memory_mb=512, disk_gb=1)])
    batcher.close()
    with engine.connect() as conn:
        row = conn.execute(sa.select(nodes)).one()
        held = conn.execute(sa.select(sa.func.count()).select_from(
            models.allocations)).scalar()
    assert (held, row.vcpus_used, row.memory_mb_used) == (3, 3, 1536)



@pytest.mark.databases("postgresql")
def test_a_login_reset_by_a_crashing_server_is_waited_out(engine):
    """The server crashed: a pooled session is gone, and the first
    logins after it are reset by the server going down, which psycopg2
    (connecting through the wait callback) reports as a bare "Connection
    reset by peer" — a release 25 ms into a crash failed on it in 14 ms.
    The retry waits it out and the work runs on a new connection, not on
    the dead one. The session is ended for real; the resets are made at
    the driver's connect, as psycopg2 raises them."""
    import psycopg2

    with engine.connect() as other:
        with engine.connect() as conn:
            dead = conn.connection.driver_connection
            backend = _backend_id(conn)
        # Idle in the pool, next in line for a checkout (FIFO).
        other.exec_driver_sql(f"SELECT pg_terminate_backend({backend})")
    resets = []

    @sa.event.listens_for(engine, "do_connect")
    def reset(dialect, record, cargs, cparams):
        if len(resets) < 2:
            resets.append(1)
            raise psycopg2.OperationalError("Connection reset by peer\n")

    used: list = []
    errors: list[BaseException] = []

    @retry.retrying(0, outage=30)
    def work() -> None:
        try:
            with engine.begin() as conn:
                used.append(conn.connection.driver_connection)
                _bump(conn, "a")
        except Exception as exc:
            errors.append(exc)
            raise

    work()
    # A disconnect to oslo.db too, as a refused login on MySQL is.
    assert [type(e) for e in errors] == [db_exc.DBConnectionError] * 2
    assert _generations(engine) == {"a": 1, "b": 0}
    assert dead not in used
