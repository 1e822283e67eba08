"""Engine set-up and the queries the scheduler runs.

Reads use SQLAlchemy Core on the Table objects: the scheduler wants rows, not
ORM objects. Times that decide liveness come from the database's clock
(:func:`utcnow`), never from a worker's, so clock skew between machines
cannot make a healthy service look dead.
"""
from __future__ import annotations

import datetime

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from scheduler.db import models

COMPUTE_BINARY = "nova-compute"
COMPUTE_TOPIC = "compute"
SQLITE_BUSY_TIMEOUT_MS = 30000


def create_engine(conf: cfg.ConfigOpts) -> sa.Engine:
    """An engine for ``[database] connection`` through oslo.db (pool
    settings, pre-ping, error translation). SQLite files run in WAL mode so
    readers do not block the writer."""
    context = enginefacade.transaction_context()
    context.configure(**{opt.dest: conf.database[opt.dest]
                         for opt in db_options.database_opts})
    engine = context.writer.get_engine()
    if engine.dialect.name == "sqlite":
        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.close()
    return engine


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


def db_time(conn: sa.Connection) -> datetime.datetime:
    """The database's clock now (naive UTC)."""
    value = conn.execute(sa.select(utcnow())).scalar_one()
    if isinstance(value, str):   # SQLite hands back text
        value = datetime.datetime.fromisoformat(value)
    return value


_NODE_COLUMNS = [
    models.compute_nodes.c[name] for name in (
        "id", "uuid", "host", "hypervisor_hostname", "generation", "vcpus",
        "vcpus_used", "memory_mb", "memory_mb_used", "local_gb",
        "local_gb_used", "cpu_allocation_ratio", "ram_allocation_ratio",
        "disk_allocation_ratio", "running_vms", "current_workload",
        "host_ip", "hypervisor_type", "hypervisor_version", "stats",
        "supported_instances", "metrics", "cpu_info")]

_SERVICE_COLUMNS = [
    models.services.c[name] for name in (
        "host", "disabled", "disabled_reason", "forced_down",
        "last_seen_up", "updated_at", "created_at")]


def compute_nodes(conn: sa.Connection, ids: list[int] | None = None
                  ) -> list[sa.Row]:
    """Live compute node rows (optionally only ``ids``), with the columns
    host states need."""
    query = sa.select(*_NODE_COLUMNS).where(
        models.compute_nodes.c.deleted == 0)
    if ids is not None:
        query = query.where(models.compute_nodes.c.id.in_(ids))
    return list(conn.execute(query))


def compute_services(conn: sa.Connection) -> dict[str, sa.Row]:
    """Live compute services by host, disabled ones included (ComputeFilter
    rejects them; forcing may still target them)."""
    query = sa.select(*_SERVICE_COLUMNS).where(
        models.services.c.deleted == 0,
        models.services.c.binary == COMPUTE_BINARY)
    return {row.host: row for row in conn.execute(query)}


def aggregates_by_host(conn: sa.Connection
                       ) -> dict[str, list[tuple[int, str, dict[str, str]]]]:
    """host -> [(aggregate id, name, metadata)] for live aggregates."""
    agg = models.aggregates
    meta: dict[int, dict[str, str]] = {}
    names: dict[int, str] = {}
    for row in conn.execute(sa.select(agg.c.id, agg.c.name)
                            .where(agg.c.deleted == 0)):
        names[row.id] = row.name
        meta[row.id] = {}
    md = models.aggregate_metadata
    for row in conn.execute(sa.select(md.c.aggregate_id, md.c.key,
                                      md.c.value).where(md.c.deleted == 0)):
        if row.aggregate_id in meta:
            meta[row.aggregate_id][row.key] = row.value
    ah = models.aggregate_hosts
    out: dict[str, list] = {}
    for row in conn.execute(sa.select(ah.c.host, ah.c.aggregate_id)
                            .where(ah.c.deleted == 0)):
        if row.aggregate_id in names:
            out.setdefault(row.host, []).append(
                (row.aggregate_id, names[row.aggregate_id],
                 meta[row.aggregate_id]))
    return out
