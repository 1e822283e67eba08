"""Compiled statements on a real PostgreSQL, where they are prepared on
the server: an error in a prepared statement's EXECUTE does not stick to
the connection the pool hands back, a prepared read outside a transaction
goes to the driver itself, and the generic plans they run find rows by
index."""
from __future__ import annotations

import re

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.sim import fleet
from scheduler.db import compute
from scheduler.db import compiled
from scheduler.db import models
from scheduler.db.compiled import Compiled
from tests.functional.conftest import node

pytestmark = pytest.mark.databases("postgresql")


def _probe(engine: sa.Engine) -> sa.Table:
    """A table of one row, (1, 7), and a pool of one connection."""
    engine.pool = sa.pool.QueuePool(engine.pool._creator, pool_size=1,
                                    max_overflow=0, dialect=engine.dialect,
                                    _dispatch=engine.pool.dispatch)
    table = sa.Table("prepared_probe", sa.MetaData(),
                     sa.Column("id", sa.Integer, primary_key=True),
                     sa.Column("value", sa.Integer),
                     sa.Column("ratio", sa.Float))
    table.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert().values(id=1, value=7, ratio=1.5))
    return table


def _autocommit(engine: sa.Engine) -> sa.Connection:
    return engine.connect().execution_options(isolation_level="AUTOCOMMIT")


@pytest.mark.parametrize("run", ["execute", "rows"])
def test_a_column_type_changed_under_a_prepared_select_fails_once(
        engine, run):
    # After the ALTER, PostgreSQL refuses the old plan ("cached plan must
    # not change result type") for as long as the session lives; the
    # pool keeps one connection, so the next call gets the same session.
    # Read by rows (outside a transaction), the EXECUTE goes to the
    # driver: its error must come out named by oslo.db all the same.
    table = _probe(engine)
    read = Compiled(sa.select(table.c.id, table.c.value)
                    .where(table.c.id > sa.bindparam("since")))

    def call(conn):
        if run == "rows":
            return [tuple(row) for row in read.rows(conn, {"since": 0})]
        return read.execute(conn, {"since": 0}).all()
    with _autocommit(engine) as conn:
        assert call(conn) == [(1, 7)]
        assert call(conn) == [(1, 7)]
        session = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "ALTER TABLE prepared_probe ALTER COLUMN value TYPE bigint")

    with _autocommit(engine) as conn:
        with pytest.raises(db_exc.DBError,
                           match="must not change result type"):
            call(conn)
    with _autocommit(engine) as conn:
        assert conn.exec_driver_sql(
            "SELECT pg_backend_pid()").scalar() == session
        assert call(conn) == [(1, 7)]


def test_a_prepared_read_outside_a_transaction_goes_to_the_driver(engine):
    table = _probe(engine)
    read = Compiled(sa.select(table.c.id, table.c.value, table.c.ratio)
                    .where(table.c.id > sa.bindparam("since")))
    statements = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda *args: statements.append(args[2]))
    with _autocommit(engine) as conn:
        typed = conn.execute(read.statement, {"since": 0}).all()
        first = read.rows(conn, {"since": 0})      # PREPARE, EXECUTE
        statements.clear()
        again = read.rows(conn, {"since": 0})
    assert statements == []
    assert [tuple(row) for row in first] == [tuple(row) for row in again] \
        == [tuple(row) for row in typed] == [(1, 7, 1.5)]
    assert isinstance(again[0][2], float)

    with engine.begin() as conn:     # in a transaction: SQLAlchemy's way
        read.rows(conn, {"since": 0})
    assert [s.split()[0] for s in statements] == ["EXECUTE"], statements


def test_a_duplicate_key_keeps_the_statement_prepared(engine):
    groups = models.claim_groups
    add = Compiled(groups.insert().values(uuid=sa.bindparam("b_uuid"),
                                          generation=1))
    with engine.begin() as conn:
        add.execute(conn, {"b_uuid": "g1"})
    statements = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda *args: statements.append(args[2]))

    with pytest.raises(db_exc.DBDuplicateEntry):
        with engine.begin() as conn:
            add.execute(conn, {"b_uuid": "g1"})
    with engine.begin() as conn:
        add.execute(conn, {"b_uuid": "g2"})

    sent = [s.split()[0] for s in statements]
    assert sent == ["EXECUTE", "EXECUTE"], statements


def test_a_read_after_a_column_type_change_is_typed_by_the_new_type(
        engine):
    # psycopg2 hands NUMERIC back as Decimal, and SQLAlchemy's Float
    # turns it into a float; read as DOUBLE PRECISION there was nothing to
    # turn. What rows found for the old type must not outlive it.
    table = _probe(engine)
    read = Compiled(sa.select(table.c.ratio)
                    .where(table.c.id > sa.bindparam("since")))
    with _autocommit(engine) as conn:
        read.rows(conn, {"since": 0})
        assert read.rows(conn, {"since": 0}) == [(1.5,)]
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "ALTER TABLE prepared_probe ALTER COLUMN ratio TYPE numeric")

    with _autocommit(engine) as conn:
        with pytest.raises(db_exc.DBError):
            read.rows(conn, {"since": 0})
        read.rows(conn, {"since": 0})      # PREPARE again, EXECUTE
        [(ratio,)] = read.rows(conn, {"since": 0})
    assert ratio == 1.5 and isinstance(ratio, float), repr(ratio)


def test_the_refreshs_generic_plan_reads_changed_nodes_by_index(engine):
    """Planned once without knowing ``since``, the refresh's read expects
    a handful of changed nodes and reaches them through the change_seq
    index, even where the table's order says nothing of change_seq (rows
    updated in place over time)."""
    hosts = 3000
    fleet.register(engine, [node(f"h{i:05d}") for i in range(hosts)])
    with _autocommit(engine) as conn:
        conn.exec_driver_sql(
            "CREATE INDEX shuffle ON compute_nodes (md5(id::text))")
        conn.exec_driver_sql("CLUSTER compute_nodes USING shuffle")
        conn.exec_driver_sql("DROP INDEX shuffle")
        conn.exec_driver_sql("ANALYZE compute_nodes")
        counters, _ = compute.changes(conn)
        since = counters.nodes - 2
        assert len(compute.changes(conn, since)[1]) == 2     # now prepared
        name = conn.connection.info[compiled._PREPARED][compute._CHANGES]
        form = compute._CHANGES._form(conn.dialect)
        plan = "\n".join(conn.exec_driver_sql(
            f"EXPLAIN EXECUTE {name}{form.arguments}",
            compiled._args(form, {"since": since})).scalars())
    assert "$1" in plan, plan                # generic: no values in it
    assert "compute_nodes_change_seq_idx" in plan, plan
    assert "Seq Scan on compute_nodes" not in plan, plan
    expected = [int(rows) for rows in re.findall(
        r"on compute_nodes .*rows=(\d+)", plan)]
    assert expected and max(expected) <= hosts // 100, plan
