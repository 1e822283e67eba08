"""Compiled statements on a real SQLite file: the same rows and errors as
``conn.execute``, binds processed, Python-side defaults refused."""
from __future__ import annotations

import sys
import threading
import types

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from scheduler.db import models
from scheduler.db.compiled import Compiled

GROUPS = models.claim_groups

BUMP = Compiled(GROUPS.update()
                .where(GROUPS.c.uuid == sa.bindparam("b_uuid"))
                .values(generation=GROUPS.c.generation + 2))
ADD = Compiled(GROUPS.insert().values(uuid=sa.bindparam("b_uuid"),
                                      generation=sa.bindparam("b_gen")))


def _generations(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(conn.execute(sa.select(GROUPS.c.uuid,
                                           GROUPS.c.generation)).all())


def test_writes_what_the_expression_says_constants_included(engine):
    with engine.begin() as conn:
        ADD.execute(conn, {"b_uuid": "g1", "b_gen": 1})
        updated = BUMP.execute(conn, {"b_uuid": "g1"}).rowcount
        missed = BUMP.execute(conn, {"b_uuid": "nobody"}).rowcount
    assert (updated, missed) == (1, 0)
    assert _generations(engine) == {"g1": 3}


def test_a_list_of_parameters_writes_every_row(engine):
    with engine.begin() as conn:
        ADD.execute(conn, [{"b_uuid": "g1", "b_gen": 1},
                           {"b_uuid": "g2", "b_gen": 5}])
    assert _generations(engine) == {"g1": 1, "g2": 5}


def test_a_duplicate_key_is_translated_as_by_execute(engine):
    with engine.begin() as conn:
        ADD.execute(conn, {"b_uuid": "g1", "b_gen": 1})
    with pytest.raises(db_exc.DBDuplicateEntry):
        with engine.begin() as conn:
            ADD.execute(conn, {"b_uuid": "g1", "b_gen": 2})
    assert _generations(engine) == {"g1": 1}


def test_a_missing_bind_names_itself(engine):
    with pytest.raises(KeyError, match="b_gen"):
        with engine.begin() as conn:
            ADD.execute(conn, {"b_uuid": "g1"})


class _Upper(sa.TypeDecorator):
    """A type whose bind processing shows: it upper-cases the value."""
    impl = sa.String
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return value.upper()


def test_binds_go_through_their_types_processing(engine):
    shout = Compiled(GROUPS.insert().values(
        uuid=sa.bindparam("b_uuid", type_=_Upper), generation=0))
    with engine.begin() as conn:
        shout.execute(conn, {"b_uuid": "quiet"})
    assert _generations(engine) == {"QUIET": 0}


def test_a_python_side_default_is_refused_by_name(engine):
    # compute_nodes.updated_at is set by Python on every UPDATE that does
    # not set it: compiled once, every run would reuse the first value.
    nodes = models.compute_nodes
    stale = Compiled(nodes.update().values(vcpus=sa.bindparam("b_vcpus")))
    with pytest.raises(ValueError, match="updated_at"):
        with engine.begin() as conn:
            stale.execute(conn, {"b_vcpus": 1})


def test_named_paramstyle_gets_a_mapping_with_the_constants():
    form = BUMP._compile(postgresql.psycopg2.dialect())
    assert form.order is None
    assert "%(b_uuid)s" in form.sql
    [constant] = form.constants.values()
    assert constant == 2


class _Shout(sa.TypeDecorator):
    """A type whose result processing shows: it upper-cases what it reads."""
    impl = sa.String
    cache_ok = True

    def process_result_value(self, value, dialect):
        return None if value is None else value.upper()


def _statements(engine: sa.Engine) -> list[str]:
    sent: list[str] = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda *args: sent.append(args[2]))
    return sent


def test_rows_read_from_the_driver_are_typed_as_sqlalchemy_reads_them(
        engine):
    with engine.begin() as conn:
        ADD.execute(conn, [{"b_uuid": "g1", "b_gen": 1},
                           {"b_uuid": "g2", "b_gen": 5}])
    read = Compiled(sa.select(sa.type_coerce(GROUPS.c.uuid, _Shout),
                              GROUPS.c.generation)
                    .where(GROUPS.c.generation > sa.bindparam("since"))
                    .order_by(GROUPS.c.uuid))
    sent = _statements(engine)
    with engine.connect() as conn:
        rows = read.rows(conn, {"since": 0})
        typed = conn.execute(read.statement, {"since": 0}).all()
    assert [tuple(row) for row in rows] == [tuple(row) for row in typed] \
        == [("G1", 1), ("G2", 5)]
    # Only the comparison's own read went through SQLAlchemy.
    assert len(sent) == 1, sent


def test_a_driver_error_in_rows_is_raised_as_oslo_db_names_it(engine):
    missing = sa.Table("no_such_table", sa.MetaData(),
                       sa.Column("id", sa.Integer))
    read = Compiled(sa.select(missing.c.id)
                    .where(missing.c.id > sa.bindparam("since")))
    with engine.connect() as conn:
        with pytest.raises(db_exc.DBError, match="no such table"):
            read.rows(conn, {"since": 0})


class _PreparingConnection:
    """What :meth:`Compiled.execute` touches of a psycopg2 connection:
    its dialect, its record of prepared statements (``connection.info``),
    and ``exec_driver_sql``, which keeps what it is sent."""

    def __init__(self):
        self.dialect = postgresql.psycopg2.dialect()
        self.connection = types.SimpleNamespace(info={})
        self.sent: list[str] = []

    def exec_driver_sql(self, sql, args=None):
        self.sent.append(sql)


def test_statements_prepared_at_once_in_threads_get_distinct_names():
    # Executor threads prepare statements on their own connections: each
    # first use takes a new name. Released together by a barrier, with
    # the interpreter switching threads as often as it can, they must
    # all get one, each a different one.
    threads, rounds = 8, 1000
    statements = [Compiled(GROUPS.update()
                           .where(GROUPS.c.uuid == sa.bindparam("b_uuid"))
                           .values(generation=n))
                  for n in range(10)]
    barrier = threading.Barrier(threads)
    connections = [_PreparingConnection() for _ in range(threads)]
    errors: list[BaseException] = []

    def prepare(conn: _PreparingConnection) -> None:
        try:
            for _ in range(rounds):
                conn.connection.info.clear()
                barrier.wait()
                for statement in statements:
                    statement.execute(conn, {"b_uuid": "g1"})
        except threading.BrokenBarrierError:
            pass
        except BaseException as error:      # kept for the assert
            errors.append(error)
            barrier.abort()

    for statement in statements:            # compiled before the race
        statement._form(connections[0].dialect)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=prepare, args=(conn,))
                   for conn in connections]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    names = [sql.split()[1] for conn in connections for sql in conn.sent
             if sql.startswith("PREPARE ")]
    assert len(names) == len(set(names)) == threads * rounds * 10
