"""The engine: ``[database] connection`` through oslo.db, with the
session settings claims and refreshes are written for on each database
(SQLite's WAL and pooled files, MySQL's READ COMMITTED, PostgreSQL's lock
timeout and generic plans) and a bound on every wait."""
from __future__ import annotations

import time
from typing import Any

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import exc_filters
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import compiled
from scheduler.db import response
from scheduler.db import retry


def engine_url(conf: cfg.ConfigOpts) -> sa.engine.URL:
    """The URL :func:`create_engine` connects to: ``[database]
    connection`` with ``connection_parameters`` appended to its query, as
    oslo.db appends them."""
    url = sa.engine.make_url(conf.database.connection)
    parameters = conf.database.connection_parameters
    return url.update_query_string(parameters, append=True) if parameters \
        else url


def create_engine(conf: cfg.ConfigOpts) -> sa.Engine:
    """An engine for ``[database] connection`` through oslo.db (pool
    settings, pre-ping, error translation). SQLite files run in WAL mode so
    readers do not block the writer; MySQL sessions run at READ COMMITTED;
    PostgreSQL sessions plan a prepared statement once. Every session
    waits for a lock at most ``[scheduler] db_lock_timeout`` seconds, and
    for any answer of the server (connecting too) at most that plus a
    margin (:mod:`scheduler.db.response`): a server that stops answering
    ends a statement as a lost connection, not in a hang.
    :raises ConfigError: a MySQL server without ``DELETE ... RETURNING``
        (Oracle MySQL; MariaDB has it).
    """
    url = engine_url(conf)
    answer_timeout = response.timeout(conf)
    if url.get_backend_name() == "postgresql" and \
            url.get_driver_name() == "psycopg2":
        # Before oslo.db's first connection, which tests the URL.
        response.bound_psycopg2(answer_timeout)
    context = enginefacade.transaction_context()
    # thread_checkin off: oslo.db otherwise calls time.sleep(0) on every
    # connection check-in so that eventlet greenthreads get a turn. This
    # service runs real threads, where it only hands the GIL away
    # mid-request and sleeps for the kernel's timer slack: 55 us per
    # check-in on the benchmark machine, two check-ins per request.
    context.configure(thread_checkin=False,
                      **{opt.dest: conf.database[opt.dest]
                         for opt in db_options.database_opts})
    engine = context.writer.get_engine()
    if engine.dialect.name in ("mysql", "postgresql"):
        # A SQLite file has no connection to lose (and oslo.db's SQLite
        # rollback listener fails on an invalidated one).
        _lost_is_disconnect(engine)
    # A request's transaction held up past its caller's patience (a lock,
    # a network cut) does not commit: the caller has re-sent the request,
    # been answered, and may have released what it was told since.
    sa.event.listen(engine, "commit", retry.refuse_if_caller_gone)
    lock_timeout = int(conf.scheduler.db_lock_timeout)
    if engine.dialect.name == "mysql" and not engine.dialect.delete_returning:
        # Release and expiry give usage back exactly once by deleting with
        # RETURNING; without it they would fail at the first release.
        version = ".".join(map(str, engine.dialect.server_version_info))
        engine.dispose()
        raise exception.ConfigError(
            f"[database] connection: MySQL {version} has no DELETE ... "
            f"RETURNING, which releasing claims needs; use MariaDB or "
            f"PostgreSQL")
    if engine.dialect.name == "sqlite" and engine.url.database not in (
            None, "", ":memory:"):
        # oslo.db gives SQLite files a NullPool: a new connection, file open
        # and pragmas on every checkout. The scheduler checks out a
        # connection per request, so keep a pool of them instead (SQLite
        # file connections may move between threads: check_same_thread is
        # off for them). The new pool takes over the old one's listeners:
        # oslo.db's connection set-up ([database] sqlite_synchronous, its
        # own transaction control) lives there.
        cargs, cparams = engine.dialect.create_connect_args(engine.url)
        cparams["check_same_thread"] = False
        engine.pool = sa.pool.QueuePool(
            lambda: engine.dialect.loaded_dbapi.connect(*cargs, **cparams),
            pool_size=8, max_overflow=32, dialect=engine.dialect,
            _dispatch=engine.pool.dispatch)
    if engine.dialect.name == "mysql":
        # READ COMMITTED, PostgreSQL's default, which claims and refreshes
        # are written for: every statement sees what has committed before
        # it (a group's membership check after its lock sees every earlier
        # member), and InnoDB takes no gap locks, so expiry's range DELETE
        # does not block concurrent claims' INSERTs. InnoDB's own default
        # (REPEATABLE READ) would freeze reads at the transaction's first.
        @sa.event.listens_for(engine, "connect")
        def _mysql_read_committed(dbapi_connection, record):
            cursor = dbapi_connection.cursor()
            cursor.execute(
                "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            cursor.execute(
                f"SET SESSION innodb_lock_wait_timeout = {lock_timeout}")
            # MariaDB's; see _postgresql_session for why.
            cursor.execute(
                f"SET SESSION idle_transaction_timeout = {answer_timeout}")
            cursor.close()

        # PyMySQL's socket timeouts: it waits in recv() for ever by
        # default. A timeout raises "Lost connection" (2013): retry.is_away.
        # Options set in [database] connection_parameters win.
        @sa.event.listens_for(engine, "do_connect")
        def _mysql_timeouts(dialect, record, cargs, cparams):
            if dialect.driver == "pymysql":
                cparams.setdefault("read_timeout", answer_timeout)
                cparams.setdefault("write_timeout", answer_timeout)
    if engine.dialect.name == "postgresql":
        generic_plans = compiled.prepares(engine.dialect)

        # PostgreSQL waits for a row lock for ever by default: one
        # transaction left open on a node's row (an operator's) would hold
        # every claim on it, and the worker's threads with them.
        #
        # Our statements prepared on the server (db.compiled) run their
        # generic plan, planned once per connection, instead of being
        # planned again on every EXECUTE: PostgreSQL's own choice kept
        # re-planning the refresh's read, whose generic estimate is higher
        # than a custom plan's. Each of them finds its rows by an index
        # with its values unknown: the claims' by primary key, the read's
        # by change_seq (tests/functional/test_compiled.py reads its plan).
        # psycopg2 prepares nothing else; plan_cache_mode is PostgreSQL
        # 12's.
        #
        # A scheduler cut off the network mid-claim (its machine gone, a
        # partition) leaves its transaction open on the server, holding
        # the node rows it updated: without a bound, until the server's
        # TCP keepalive gives up (hours), every claim on those nodes fails
        # its lock timeout. None of our transactions waits between two
        # statements longer than one round trip may take, so the server
        # ends one idle for that long and lets its locks go. (The
        # scheduler's side dropped the connection by then: response.)
        #
        # A SET is undone with its transaction, so these are committed,
        # once.
        @sa.event.listens_for(engine, "connect")
        def _postgresql_session(dbapi_connection, record):
            with dbapi_connection.cursor() as cursor:
                cursor.execute(f"SET lock_timeout = '{lock_timeout}s'")
                cursor.execute("SET idle_in_transaction_session_timeout = "
                               f"'{answer_timeout}s'")
                if generic_plans and \
                        dbapi_connection.server_version >= 120000:
                    cursor.execute("SET plan_cache_mode = force_generic_plan")
            dbapi_connection.commit()
    if engine.dialect.name == "sqlite":
        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, record):
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout={lock_timeout * 1000}")
            cursor.close()
            _sqlite_wal(dbapi_connection, engine.dialect.loaded_dbapi,
                        lock_timeout)
        _sqlite_begin_directly(engine)
    if engine.dialect.name in ("mysql", "postgresql"):
        # oslo.db made and pooled a connection, to test the URL, before the
        # listeners above were there; made again, every connection has
        # its session settings.
        engine.dispose()
    return engine


def _lost_is_disconnect(engine: sa.Engine) -> None:
    """Take every error that says the connection was lost
    (:data:`scheduler.db.retry.LOST`) for a disconnect, as SQLAlchemy does
    for the texts its dialect knows.

    SQLAlchemy's psycopg2 dialect misses some (a bare "Connection reset by
    peer", TLS's "SSL SYSCALL error: Connection reset by peer", its own
    texts after a quote). Then the dead connection went back to the pool,
    and oslo.db left the error a raw OperationalError instead of a
    DBConnectionError. Marked a disconnect, SQLAlchemy invalidates the
    connection and the pool's older ones (a pre-ping reconnects instead of
    failing), and oslo.db raises DBConnectionError.
    """
    def _lost(context: sa.engine.ExceptionContext) -> None:
        error = context.sqlalchemy_exception
        if not context.is_disconnect and error is not None and \
                retry.is_lost(error):
            context.is_disconnect = True

    # Before oslo.db's listener, which reads the mark (and raises most
    # errors, which ends the listeners). SQLAlchemy 2 drops insert=True
    # for this event, so oslo.db's goes after: taken off and put back.
    oslo = sa.event.contains(engine, "handle_error", exc_filters.handler)
    if oslo:
        sa.event.remove(engine, "handle_error", exc_filters.handler)
    sa.event.listen(engine, "handle_error", _lost)
    if oslo:
        sa.event.listen(engine, "handle_error", exc_filters.handler,
                        retval=True)


def _sqlite_wal(dbapi_connection: Any, dbapi: Any, lock_timeout: int) -> None:
    """Put the file in WAL mode (a no-op once it is), trying again for up
    to ``lock_timeout`` seconds while SQLite says it is locked.

    Two connections switching a new file at once (two 'db sync' started
    together) deadlock: each holds a read lock and wants the other's gone.
    SQLite answers one of them "database is locked" at once, without
    waiting in its busy handler; that one tries again once the other has
    switched, and finds the file in WAL mode.
    """
    deadline = time.monotonic() + lock_timeout
    while True:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except dbapi.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
        finally:
            cursor.close()
        time.sleep(0.01)


def _sqlite_begin_directly(engine: sa.Engine) -> None:
    """Start SQLite transactions on the driver's connection, and none at
    all on a connection in AUTOCOMMIT.

    oslo.db turns pysqlite's own transaction handling off and emits BEGIN
    from its "begin" listener as a SQLAlchemy statement: 65 us a time on
    the benchmark machine, one BEGIN per claim and one per refresh, where
    the driver takes 3 us. It also emits it under AUTOCOMMIT, so a refresh
    (usually one SELECT) paid for a transaction, and a ROLLBACK, it does not
    need. This listener takes that one's place; if oslo.db ever ships
    without it, its own transaction control is left as it is.
    """
    oslo_begin = [fn for fn in engine.dispatch.begin
                  if getattr(fn, "__name__", "") == "_sqlite_emit_begin"]
    if len(oslo_begin) != 1:
        return
    sa.event.remove(engine, "begin", oslo_begin[0])

    @sa.event.listens_for(engine, "begin")
    def _sqlite_begin(conn: sa.Connection) -> None:
        if conn.get_execution_options().get("isolation_level") != \
                "AUTOCOMMIT":
            conn.connection.driver_connection.execute("BEGIN")


