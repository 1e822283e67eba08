"""db.engine.create_engine: the settings its connections get, on real SQLite
databases (a file, as the service uses, and in memory)."""
from __future__ import annotations

import multiprocessing

from oslo_db.sqlalchemy import engines as oslo_engines
import pytest
import sqlalchemy as sa

from scheduler.db.engine import create_engine


def _pragma(engine: sa.Engine, name: str):
    with engine.connect() as conn:
        return conn.exec_driver_sql(f"PRAGMA {name}").scalar()


def test_a_sqlite_file_runs_in_wal_mode(engine):
    assert _pragma(engine, "journal_mode") == "wal"


# Forked: two threads of one process do not meet SQLite's deadlock.
@pytest.mark.filterwarnings("ignore:Using fork:DeprecationWarning")
def test_two_processes_opening_a_new_file_at_once_both_get_wal(conf,
                                                               tmp_path):
    # Two 'db sync' started together: both switch the new file to WAL at
    # once, which SQLite answers with "database is locked" for one of them
    # at once (no busy wait); most rounds did before the retry.
    fork = multiprocessing.get_context("fork")
    for attempt in range(20):
        conf.set_override("connection",
                          f"sqlite:///{tmp_path}/race-{attempt}.sqlite",
                          group="database")
        engine = create_engine(conf)
        barrier, answers = fork.Barrier(2), fork.Queue()
        workers = [fork.Process(target=_connect_at_once,
                                args=(engine, barrier, answers))
                   for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        engine.dispose()
        assert [answers.get(timeout=5), answers.get(timeout=5)] == \
            ["wal", "wal"], f"attempt {attempt}"


def _connect_at_once(engine: sa.Engine, barrier, answers) -> None:
    barrier.wait()
    try:
        with engine.connect() as conn:
            answers.put(conn.exec_driver_sql("PRAGMA journal_mode").scalar())
    except Exception as error:
        answers.put(repr(error))


@pytest.mark.parametrize("synchronous, level", [(True, 2), (False, 0)])
def test_sqlite_synchronous_applies_to_a_sqlite_file(conf, synchronous,
                                                     level):
    # The file's connections come from a pool the scheduler puts in place
    # of oslo.db's; oslo.db's connection set-up must still run on them.
    conf.set_override("sqlite_synchronous", synchronous, group="database")
    engine = create_engine(conf)
    try:
        assert _pragma(engine, "synchronous") == level
    finally:
        engine.dispose()


def test_a_sqlite_file_keeps_connections_between_requests(engine):
    with engine.connect() as conn:
        first = conn.connection.driver_connection
    with engine.connect() as conn:
        assert conn.connection.driver_connection is first


@pytest.mark.parametrize("connection", ["file", "sqlite://"])
def test_returning_a_connection_does_not_sleep(conf, monkeypatch,
                                               connection):
    # oslo.db's eventlet yield (time.sleep(0) at every check-in) only hands
    # the GIL away in a threaded service, and sleeps for the timer slack.
    if connection != "file":
        conf.set_override("connection", connection, group="database")
    sleeps = []
    monkeypatch.setattr(oslo_engines.time, "sleep", sleeps.append)
    engine = create_engine(conf)
    try:
        for _ in range(3):
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
    finally:
        engine.dispose()
    assert sleeps == []


def _statements(engine: sa.Engine) -> list[str]:
    seen: list[str] = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda conn, cursor, statement, *rest:
                    seen.append(statement))
    return seen


def test_a_sqlite_transaction_is_one_on_the_driver_connection(engine):
    # BEGIN goes to the driver directly, before the first statement, and
    # what the block wrote is undone as a whole when it fails.
    seen = _statements(engine)
    with pytest.raises(RuntimeError):
        with engine.begin() as conn:
            assert conn.connection.driver_connection.in_transaction
            conn.exec_driver_sql(
                "INSERT INTO claim_groups (uuid, generation) VALUES ('g', 1)")
            raise RuntimeError("undo")
    with engine.connect() as conn:
        assert conn.exec_driver_sql(
            "SELECT count(*) FROM claim_groups").scalar() == 0
    assert "BEGIN" not in seen


def test_a_sqlite_read_in_autocommit_holds_no_transaction(engine):
    # A refresh's reads: each statement its own snapshot, and no read
    # transaction left open to hold back WAL checkpoints.
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql("SELECT count(*) FROM compute_nodes").scalar()
        assert not conn.connection.driver_connection.in_transaction
