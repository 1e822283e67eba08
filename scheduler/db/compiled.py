"""Statements compiled once per dialect, for the few run on every request.

``conn.execute(statement, params)`` does, on every call, work whose result
never changes for a statement built once: it looks the compiled form up
in a cache (hashing a key of the whole expression), runs each parameter
through its type's bind processor, fills Python-side column defaults, and
sets up a result. On the benchmark machine that is about 14 us a
statement on SQLite, against 9 us for SQLAlchemy's plain path,
``Connection.exec_driver_sql``, with the SQL string and the parameters in
the driver's own form. That path still runs SQLAlchemy's events, so
oslo.db translates errors (a duplicate key stays ``DBDuplicateEntry``, a
lost connection ``DBConnectionError``) exactly as before.

A SELECT is run that way only where it is prepared (below); elsewhere it
goes through ``conn.execute``, which is faster for a statement that returns
rows: ``exec_driver_sql`` builds the result's column map on every call.
:meth:`Compiled.rows` reads a SELECT's rows without either, straight from
the driver's cursor (SQLite; a prepared statement on PostgreSQL): for a read
of a few rows SQLAlchemy's result set-up is most of the cost.

Bind processors (a type's conversion of a value for the driver) are
kept from the compiled form and applied here. Python-side column defaults
are not: :class:`Compiled` refuses, when it compiles, a statement that
would need one, naming the columns.

On PostgreSQL (psycopg2) the statement is also prepared on the server,
once per connection (``PREPARE``, then ``EXECUTE`` with the values):
psycopg2 sends every statement as text, which the server parses and plans
again each time. For a claim's one statement that planning was most of
its cost: 258 us a call, 152 us prepared, on the benchmark machine. The
engine's connections run a prepared statement on its generic plan,
planned once (``plan_cache_mode``, set in ``db.engine.create_engine``). A
prepared statement lives as long as its server session; SQLAlchemy
forgets the connection's record of it (``info``) when it replaces the
connection. A proxy that hands one client's statements to several server
sessions (pgbouncer in transaction mode) is therefore not supported.

After an error in its EXECUTE (other than the values' own, such as a
duplicate key), a statement is prepared again, under a new name, the next
time it runs on that connection. Otherwise an error that sticks to the
prepared statement would come back on every call for as long as the pool
keeps the session: after a migration changes the type of a column a
prepared SELECT returns, PostgreSQL refuses it with "cached plan must not
change result type".
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import re
import threading
from typing import Any, Callable, Mapping, Sequence

from oslo_db import exception as db_exc
import sqlalchemy as sa


@dataclasses.dataclass(frozen=True)
class _Form:
    """A statement as one dialect's driver takes it."""
    sql: str
    #: Bind names in the order of the SQL's placeholders, for a
    #: positional paramstyle; None for a named one.
    order: tuple[str, ...] | None
    #: Values of the binds the expression itself fixed (``generation + 1``),
    #: already processed.
    constants: dict[str, Any]
    #: bind name -> its type's bind processor, for those that have one.
    processors: dict[str, Callable[[Any], Any]]
    #: The statement as the server prepares it (binds as ``$n``), or None
    #: when it is sent as ``sql``.
    prepare: str | None = None
    #: EXECUTE's argument list for the driver: ``(%(b_uuid)s, ...)``.
    arguments: str = ""


#: The connection ``info`` key of {Compiled: the name it is prepared under
#: on that connection}.
_PREPARED = "scheduler.prepared"
#: Errors that are the values' fault, not the prepared statement's: a
#: duplicate key (a re-sent claim) keeps the statement prepared.
_DATA_ERRORS = (db_exc.DBDuplicateEntry, db_exc.DBReferenceError,
              db_exc.DBConstraintError)
#: Numbers of prepared statements' names: unique in a process, so on a
#: connection. Executor threads take them concurrently, hence the lock (a
#: generator here raised "generator already executing" when two threads
#: resumed it at once).
_NUMBERS = itertools.count(1)
_NUMBERS_LOCK = threading.Lock()
#: psycopg2's named placeholder, as SQLAlchemy renders it.
_PYFORMAT = re.compile(r"%\((\w+)\)s")
#: Not looked up yet (None means: no column has a processor).
_UNKNOWN = object()


def prepares(dialect: sa.Dialect) -> bool:
    """Whether :class:`Compiled` prepares its statements on ``dialect``'s
    server (PostgreSQL through psycopg2)."""
    return dialect.name == "postgresql" and dialect.driver == "psycopg2"


class Compiled:
    """``statement`` run through ``exec_driver_sql``, compiled the first time
    each dialect runs it.

    Parameters are given by bind name, as to ``conn.execute``; every
    bind without a value in the expression must be given.
    """

    def __init__(self, statement: sa.Executable):
        self.statement = statement
        self._selects = isinstance(statement, sa.Select)
        self._forms: dict[str, _Form] = {}
        #: dialect name -> what :meth:`_result_processors` found.
        self._results: dict[str, Any] = {}

    def execute(self, conn: sa.Connection,
                params: Mapping[str, Any] | Sequence[Mapping[str, Any]]
                ) -> sa.CursorResult:
        """Run the statement once, or once per mapping of a list of them.

        A list goes through ``conn.execute`` after all: there SQLAlchemy
        may send the rows in one statement (psycopg2's ``execute_values``),
        which the driver's own executemany would send one by one.

        :raises ValueError: the statement takes a Python-side column
            default on this dialect (see the module's docstring).
        :raises KeyError: a bind was not given.
        :raises: whatever the database raises, translated by oslo.db.
        """
        if not isinstance(params, Mapping) or (
                self._selects and not prepares(conn.dialect)):
            # 38 against 28 us for the refresh's SELECT on SQLite.
            return conn.execute(self.statement, params)
        form = self._form(conn.dialect)
        args = _args(form, params)
        if form.prepare is None:
            return conn.exec_driver_sql(form.sql, args)
        prepared = conn.connection.info.setdefault(_PREPARED, {})
        name = prepared.get(self)
        if name is None:
            # A new name every time: one prepared before an error is still
            # in the session.
            name = _new_name()
            # Not transactional: it stays if a transaction rolls back.
            conn.exec_driver_sql(f"PREPARE {name} AS {form.prepare}")
            prepared[self] = name
        try:
            return conn.exec_driver_sql(f"EXECUTE {name}{form.arguments}",
                                        args)
        except _DATA_ERRORS:
            raise
        except Exception:
            del prepared[self]      # prepared again next time (see above)
            raise

    def rows(self, conn: sa.Connection, params: Mapping[str, Any]
             ) -> list[Sequence[Any]]:
        """Every row of the SELECT, each column typed as SQLAlchemy's own
        read types it (its result processors applied).

        Where it can, straight from the driver's cursor: on SQLite, and on
        PostgreSQL once the statement is prepared on the connection and
        outside a transaction. For the refresh's read of a few rows,
        SQLAlchemy's result set-up cost more than the statement on SQLite:
        26 against 11 us a call in a loop, and in a worker, where each
        request finds the caches cold, 140-240 against 60-80 us. No
        SQLAlchemy event sees the statement then, and a driver error is not
        yet oslo.db's: the statement runs once more through
        :meth:`execute`, which raises that error as oslo.db names it (or
        answers, if it passed). A SELECT may run twice; nothing else is
        read this way. On PostgreSQL that second run is one reason for
        reading so only outside a transaction: inside one, the first error
        would have aborted it, and the second would name that instead.

        :raises: as :meth:`execute`.
        """
        sql = self._driver_sql(conn)
        if sql is None:
            return self.execute(conn, params).all()
        form = self._form(conn.dialect)
        try:
            with contextlib.closing(
                    conn.connection.driver_connection.cursor()) as cursor:
                cursor.execute(sql, _args(form, params))
                rows = cursor.fetchall()
                results = self._results.get(conn.dialect.name, _UNKNOWN)
                if results is _UNKNOWN:
                    results = self._results[conn.dialect.name] = \
                        self._result_processors(conn.dialect,
                                                cursor.description)
        except conn.dialect.loaded_dbapi.Error:
            # Looked up again after the next read: what broke may have
            # been a column's type (see the module's docstring).
            self._results.pop(conn.dialect.name, None)
            return self.execute(conn, params).all()
        if results is not None:
            rows = [tuple(value if process is None else process(value)
                          for process, value in zip(results, row))
                    for row in rows]
        return rows

    def _driver_sql(self, conn: sa.Connection) -> str | None:
        """What :meth:`rows` sends the driver itself on ``conn``, or None
        where it goes through :meth:`execute`."""
        if not self._selects:
            return None
        dialect = conn.dialect
        if dialect.name == "sqlite" and dialect.driver == "pysqlite":
            return self._form(dialect).sql
        if prepares(dialect):
            name = conn.connection.info.get(_PREPARED, {}).get(self)
            if name is not None and \
                    conn.connection.driver_connection.autocommit:
                return f"EXECUTE {name}{self._form(dialect).arguments}"
        return None

    def _result_processors(self, dialect: sa.Dialect, description: Any
                           ) -> tuple[Callable[[Any], Any] | None, ...] | None:
        """The result processor SQLAlchemy gives each column read with
        ``description`` (the cursor's: a column's processor may depend on
        the type the driver reports), or None when no column has one."""
        processors = tuple(
            column.type.dialect_impl(dialect).result_processor(
                dialect, described[1])
            for column, described in zip(self.statement.selected_columns,
                                         description))
        return processors if any(processors) else None

    def _form(self, dialect: sa.Dialect) -> _Form:
        """The statement as ``dialect``'s driver takes it (compiled on the
        first call)."""
        form = self._forms.get(dialect.name)
        if form is None:
            form = self._forms[dialect.name] = self._compile(dialect)
        return form

    def _compile(self, dialect: sa.Dialect) -> _Form:
        compiled = self.statement.compile(dialect=dialect)
        prefetch = [c.name for c in (compiled.insert_prefetch
                                     + compiled.update_prefetch)]
        if prefetch:
            raise ValueError(
                f"cannot run compiled: column(s) {', '.join(prefetch)} "
                f"take a Python-side default on {dialect.name}; set them "
                f"in the statement")
        processors = {}
        constants = {}
        for bind in compiled.binds.values():
            # The name the SQL's placeholder has (anonymous binds get
            # theirs at compile time).
            name = compiled.bind_names[bind]
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                processors[name] = process
            if not bind.required:
                value = bind.effective_value
                constants[name] = value if process is None else process(value)
        order = tuple(compiled.positiontup) if compiled.positional else None
        form = _Form(compiled.string, order, constants, processors)
        if prepares(dialect):
            form = self._prepared(form)
        return form

    def _prepared(self, form: _Form) -> _Form:
        """``form`` as a PREPARE and its EXECUTE: each bind becomes ``$n``
        (the server infers its type from where it is used), and EXECUTE
        passes the binds in that order. A statement with a literal ``%``
        stays as it is: PREPARE is sent without parameters, where
        psycopg2 would not undo the doubling of ``%``.
        """
        numbers: dict[str, int] = {}

        def number(match: re.Match) -> str:
            return f"${numbers.setdefault(match[1], len(numbers) + 1)}"

        body = _PYFORMAT.sub(number, form.sql)
        if "%" in body or not numbers:
            return form
        arguments = "(" + ", ".join(f"%({name})s" for name in numbers) + ")"
        return dataclasses.replace(form, prepare=body, arguments=arguments)


def _new_name() -> str:
    """A prepared statement's name no other in this process has."""
    with _NUMBERS_LOCK:
        return f"scheduler_{next(_NUMBERS)}"


def _args(form: _Form, params: Mapping[str, Any]) -> Any:
    """``params`` (processed) and the constants, as the driver takes them."""
    values = dict(form.constants)
    processors = form.processors
    for name, value in params.items():
        process = processors.get(name)
        values[name] = value if process is None else process(value)
    if form.order is None:
        return values
    return tuple(values[name] for name in form.order)
