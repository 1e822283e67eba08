"""Engine set-up and the queries the scheduler runs.

Reads use SQLAlchemy Core on the Table objects: the scheduler wants rows, not
ORM objects. Times that decide liveness come from the database's clock
(:func:`utcnow`), never from a worker's, so clock skew between machines
cannot make a healthy service look dead.
"""
from __future__ import annotations

import collections
import datetime
import time
from typing import Any, NamedTuple, Sequence

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from scheduler import exception
from scheduler.db import compiled
from scheduler.db import models
from scheduler.db import response
from scheduler.hosts.state import Aggregate

COMPUTE_BINARY = "nova-compute"
COMPUTE_TOPIC = "compute"


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
        # A SET is undone with its transaction, so the two are committed,
        # once.
        @sa.event.listens_for(engine, "connect")
        def _postgresql_session(dbapi_connection, record):
            with dbapi_connection.cursor() as cursor:
                cursor.execute(f"SET lock_timeout = '{lock_timeout}s'")
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


class Counters(NamedTuple):
    """The counters triggers bump on tracked writes (migration 0003)."""
    nodes: int
    node_deletes: int
    services: int
    aggregates: int


_NODE_COLUMNS = [
    models.compute_nodes.c[name] for name in (
        "id", "uuid", "host", "hypervisor_hostname", "generation", "vcpus",
        "vcpus_used", "memory_mb", "memory_mb_used", "local_gb",
        "local_gb_used", "cpu_allocation_ratio", "ram_allocation_ratio",
        "disk_allocation_ratio", "running_vms", "current_workload",
        "change_seq", "deleted",
        "host_ip", "hypervisor_type", "hypervisor_version", "stats",
        "supported_instances", "metrics", "cpu_info")]

#: A compute node row as host states read it. A named tuple, not
#: SQLAlchemy's Row: a Row's attribute costs 0.2 us to read, a named
#: tuple's a tenth of that, and a host state reads some 30.
NodeRow = collections.namedtuple(
    "NodeRow", [column.name for column in _NODE_COLUMNS])

_SERVICE_COLUMNS = [
    models.services.c[name] for name in (
        "host", "disabled", "disabled_reason", "forced_down",
        "change_seq", "deleted")]

_COUNTER = models.change_counter
_COUNTER_COLUMNS = [_COUNTER.c[name].label(f"counter_{name}")
                    for name in Counters._fields]

# Built once: every request's refresh runs them, and building an expression
# (and its cache key) cost about as much as running it on SQLite.
_COUNTERS = sa.select(*_COUNTER_COLUMNS).where(_COUNTER.c.id == 1)
# Compiled: prepared on PostgreSQL (in the workers its wall time went from
# about 540 to 470 us, three alternating runs at 10,000 hosts); its rows
# are read from the driver's cursor (Compiled.rows: 184 -> 70 us of CPU in
# the workers on SQLite, 214 -> 118 on PostgreSQL).
#
# The upper bound changes no result: it is there for PostgreSQL's generic
# plan, which a prepared statement runs without planning it again (see
# create_engine's plan_cache_mode). Not knowing ``since``, the planner puts
# ``change_seq > $1`` at a third of the table, a share at which a scan of
# the whole table may look cheaper than the index; a range with both
# bounds unknown it puts at 0.5 %, where the index wins.
_CHANGES = compiled.Compiled(
    sa.select(*_COUNTER_COLUMNS, *_NODE_COLUMNS)
    .select_from(_COUNTER.outerjoin(
        models.compute_nodes,
        sa.and_(models.compute_nodes.c.change_seq > sa.bindparam("since"),
                models.compute_nodes.c.change_seq <= sa.bindparam(
                    "until", 2 ** 63 - 1, type_=sa.BigInteger))))
    .where(_COUNTER.c.id == 1))


def _counters(row: Sequence[Any]) -> Counters:
    return Counters(*row[:len(Counters._fields)])


def changes(conn: sa.Connection, since: int | None = None
            ) -> tuple[Counters, list[NodeRow]]:
    """The change counters and (with ``since``) every compute node row
    stamped after that change number, deleted ones included so the caller
    can drop them.

    One statement, the refresh's once per request: one round trip, and
    rows and counters come from one snapshot, so the counters cover every
    row returned.
    """
    if since is None:
        return _counters(conn.execute(_COUNTERS).one()), []
    rows = _CHANGES.rows(conn, {"since": since})
    # The outer join: one row with no node when nothing was stamped.
    first = len(Counters._fields)
    return _counters(rows[0]), [NodeRow._make(row[first:]) for row in rows
                                if row[first] is not None]


def compute_nodes(conn: sa.Connection, ids: list[int] | None = None
                  ) -> list[NodeRow]:
    """The live compute node rows (those of ``ids`` only, if given), with
    the columns host states need."""
    nodes = models.compute_nodes
    query = sa.select(*_NODE_COLUMNS).where(nodes.c.deleted == 0)
    if ids is not None:
        query = query.where(nodes.c.id.in_(ids))
    return [NodeRow._make(row) for row in conn.execute(query)]


def compute_services(conn: sa.Connection, since: int | None = None
                     ) -> list[sa.Row]:
    """Compute service rows, disabled ones included (ComputeFilter rejects
    them; forcing may still target them): the live ones, or (``since``)
    every row stamped after that change number, deleted ones included."""
    services = models.services
    query = sa.select(*_SERVICE_COLUMNS).where(
        services.c.binary == COMPUTE_BINARY)
    if since is None:
        query = query.where(services.c.deleted == 0)
    else:
        query = query.where(services.c.change_seq > since)
    return list(conn.execute(query))


def aggregates_by_host(conn: sa.Connection
                       ) -> dict[str, tuple[Aggregate, ...]]:
    """host -> its live aggregates. One Aggregate object per aggregate and
    one tuple per distinct membership, shared by every host that has it:
    at 100,000 hosts in a few zones, a tuple per host is tens of MB."""
    agg = models.aggregates
    meta: dict[int, dict[str, str]] = {}
    names: dict[int, str] = {}
    uuids: dict[int, str | None] = {}
    for row in conn.execute(sa.select(agg.c.id, agg.c.name, agg.c.uuid)
                            .where(agg.c.deleted == 0)):
        names[row.id] = row.name
        uuids[row.id] = row.uuid
        meta[row.id] = {}
    md = models.aggregate_metadata
    for row in conn.execute(sa.select(md.c.aggregate_id, md.c.key,
                                      md.c.value).where(md.c.deleted == 0)):
        if row.aggregate_id in meta:
            meta[row.aggregate_id][row.key] = row.value
    objects = {i: Aggregate(i, names[i], meta[i], uuids[i])
               for i in names}
    ah = models.aggregate_hosts
    ids: dict[str, list[int]] = {}
    for row in conn.execute(sa.select(ah.c.host, ah.c.aggregate_id)
                            .where(ah.c.deleted == 0)
                            .order_by(ah.c.host, ah.c.aggregate_id)):
        if row.aggregate_id in objects:
            ids.setdefault(row.host, []).append(row.aggregate_id)
    shared: dict[tuple[int, ...], tuple[Aggregate, ...]] = {}
    out = {}
    for host, agg_ids in ids.items():
        key = tuple(agg_ids)
        if key not in shared:
            shared[key] = tuple(objects[i] for i in key)
        out[host] = shared[key]
    return out
