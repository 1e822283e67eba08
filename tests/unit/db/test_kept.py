"""KeptConnection on a real SQLite file: one connection across calls, each
call one transaction (or autocommit), a new connection after an error."""
from __future__ import annotations

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db.kept import KeptConnection


@pytest.fixture
def checkouts(engine):
    seen: list[int] = []
    sa.event.listen(engine, "checkout", lambda *args: seen.append(1))
    return seen


def _groups(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.exec_driver_sql(
            "SELECT uuid FROM claim_groups ORDER BY uuid").scalars())


def _insert(uuid: str):
    def work(conn: sa.Connection) -> str:
        conn.exec_driver_sql(
            "INSERT INTO claim_groups (uuid, generation) VALUES (?, 1)",
            (uuid,))
        return uuid
    return work


def test_calls_share_one_connection_checked_out_once(engine, checkouts):
    kept = KeptConnection(engine, autocommit=False)
    drivers = [kept.run(lambda conn: conn.connection.driver_connection)
               for _ in range(3)]
    assert drivers[0] is drivers[1] is drivers[2]
    assert len(checkouts) == 1
    kept.close()


def test_each_call_is_one_transaction(engine):
    kept = KeptConnection(engine, autocommit=False)
    assert kept.run(_insert("a")) == "a"
    assert _groups(engine) == ["a"]      # committed: another connection sees it

    def half_then_fail(conn):
        _insert("b")(conn)
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        kept.run(half_then_fail)
    assert _groups(engine) == ["a"]
    kept.close()


def test_autocommit_calls_hold_no_transaction(engine):
    kept = KeptConnection(engine, autocommit=True)
    assert not kept.run(
        lambda conn: (conn.exec_driver_sql("SELECT 1").scalar(),
                      conn.connection.driver_connection.in_transaction)[1])
    kept.close()


def test_the_works_own_error_rolls_back_and_keeps_the_connection(
        engine, checkouts):
    kept = KeptConnection(engine, autocommit=False)

    def half_then_lose(conn):
        _insert("a")(conn)
        raise LookupError("a lost race, say")

    with pytest.raises(LookupError):
        kept.run(half_then_lose)
    kept.run(_insert("b"))
    assert len(checkouts) == 1
    assert _groups(engine) == ["b"]
    kept.close()


def test_a_database_error_gives_the_connection_up(engine, checkouts):
    kept = KeptConnection(engine, autocommit=False)
    kept.run(_insert("a"))
    with pytest.raises(db_exc.DBDuplicateEntry):
        kept.run(_insert("a"))
    kept.run(_insert("b"))
    assert len(checkouts) == 2
    assert _groups(engine) == ["a", "b"]
    kept.close()


def test_a_lost_kept_connection_runs_the_work_once_more(engine, checkouts):
    kept = KeptConnection(engine, autocommit=False)
    kept.run(_insert("a"))
    attempts = []

    def lost_then_works(conn):
        attempts.append(1)
        if len(attempts) == 1:
            # What the first statement on a connection the server ended
            # raises (oslo.db's translation of it).
            raise db_exc.DBConnectionError("server closed the connection")
        return _insert("b")(conn)

    assert kept.run(lost_then_works) == "b"
    assert len(attempts) == 2 and len(checkouts) == 2
    assert _groups(engine) == ["a", "b"]
    kept.close()


def test_a_new_connection_lost_is_the_callers_error(engine):
    # Nothing was kept, so nothing stale explains it: no second run.
    kept = KeptConnection(engine, autocommit=False)
    attempts = []

    def lost(conn):
        attempts.append(1)
        raise db_exc.DBConnectionError("server closed the connection")

    with pytest.raises(db_exc.DBConnectionError):
        kept.run(lost)
    assert attempts == [1]
