"""Compiled statements on a real PostgreSQL, where they are prepared on
the server: an error in a prepared statement's EXECUTE does not stick to
the connection the pool hands back."""
from __future__ import annotations

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.db.compiled import Compiled

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"],
                                     indirect=True)


def test_a_column_type_changed_under_a_prepared_select_fails_once(engine):
    # After the ALTER, PostgreSQL refuses the old plan ("cached plan must
    # not change result type") for as long as the session lives; the
    # pool keeps one connection, so the next call gets the same session.
    engine.pool = sa.pool.QueuePool(engine.pool._creator, pool_size=1,
                                    max_overflow=0, dialect=engine.dialect,
                                    _dispatch=engine.pool.dispatch)
    table = sa.Table("prepared_probe", sa.MetaData(),
                     sa.Column("id", sa.Integer, primary_key=True),
                     sa.Column("value", sa.Integer))
    table.metadata.create_all(engine)
    read = Compiled(sa.select(table.c.id, table.c.value)
                    .where(table.c.id > sa.bindparam("since")))
    with engine.begin() as conn:
        conn.execute(table.insert().values(id=1, value=7))
    with engine.connect() as conn:
        assert read.execute(conn, {"since": 0}).all() == [(1, 7)]
        session = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "ALTER TABLE prepared_probe ALTER COLUMN value TYPE bigint")

    with engine.connect() as conn:
        with pytest.raises(db_exc.DBError,
                           match="must not change result type"):
            read.execute(conn, {"since": 0})
    with engine.connect() as conn:
        assert conn.exec_driver_sql(
            "SELECT pg_backend_pid()").scalar() == session
        assert read.execute(conn, {"since": 0}).all() == [(1, 7)]


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
