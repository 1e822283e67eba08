"""The database's clock, the one that decides liveness and deadlines.

Times that decide liveness come from the database's clock, never from a
worker's, so clock skew between machines cannot make a healthy service
look dead: :class:`utcnow` and :class:`utcnow_plus` in statements,
:func:`db_time` to read it.
"""
from __future__ import annotations

import datetime

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression


class utcnow(expression.FunctionElement):
    """The database's current time, in UTC, as a naive timestamp."""
    type = sa.DateTime()
    inherit_cache = True


@compiler.compiles(utcnow)
def _utcnow_default(element, compiler_, **kw):
    return "CURRENT_TIMESTAMP"


@compiler.compiles(utcnow, "postgresql")
def _utcnow_pg(element, compiler_, **kw):
    return "(now() AT TIME ZONE 'utc')"


@compiler.compiles(utcnow, "mysql")
def _utcnow_mysql(element, compiler_, **kw):
    return "UTC_TIMESTAMP()"


class utcnow_plus(expression.FunctionElement):
    """The database's current time plus a number of seconds (one integer
    argument, e.g. a bind parameter), in UTC, as a naive timestamp: a
    deadline computed by the statement that stores it, without first
    asking the database for the time."""
    type = sa.DateTime()
    inherit_cache = True


@compiler.compiles(utcnow_plus)
def _utcnow_plus_sqlite(element, compiler_, **kw):
    # The format SQLite's CURRENT_TIMESTAMP has (and that SQLAlchemy's
    # DateTime reads back).
    return ("datetime('now', (%s) || ' seconds')"
            % compiler_.process(element.clauses, **kw))


@compiler.compiles(utcnow_plus, "postgresql")
def _utcnow_plus_pg(element, compiler_, **kw):
    return ("((now() AT TIME ZONE 'utc') + (%s) * interval '1 second')"
            % compiler_.process(element.clauses, **kw))


@compiler.compiles(utcnow_plus, "mysql")
def _utcnow_plus_mysql(element, compiler_, **kw):
    return ("(UTC_TIMESTAMP() + INTERVAL (%s) SECOND)"
            % compiler_.process(element.clauses, **kw))


def db_time(conn: sa.Connection) -> datetime.datetime:
    """The database's clock now (naive UTC)."""
    value = conn.execute(sa.select(utcnow())).scalar_one()
    if isinstance(value, str):   # SQLite hands back text
        value = datetime.datetime.fromisoformat(value)
    return value


