"""The parts of nova's schemas this service reads, and the check that a
database is nova's, at the schema nova 34 leaves.

Only the columns read are declared: nova's tables have more, and a later
nova may add some; a SELECT names its columns. Nova's databases are never
written (no rows, indexes or triggers).
"""
from __future__ import annotations

import sqlalchemy as sa

from scheduler import exception

#: The alembic revisions of nova 34.0.0's API and main (cell) databases,
#: oldest first; the last is nova 34's head. A schema at an earlier one is
#: older than nova 34 (refused); one at a revision not listed is a later
#: nova's (read: the columns read here are nova's stable ones).
API_REVISIONS = ("d67eeaabee36", "b30f573d3377", "cdeec0c85668")
CELL_REVISIONS = ("8f2f1571d55b", "16f1fbcab42b", "ccb0fa1a2252",
                  "960aac0e09ea", "1b91788ec3a6", "1acf2c98e646",
                  "13863f4e1612", "d60bddf7a903", "2903cd72dc14",
                  "ab450ba04102")

api = sa.MetaData()
cell = sa.MetaData()


def _table(metadata: sa.MetaData, name: str, *columns: sa.Column
           ) -> sa.Table:
    return sa.Table(name, metadata, *columns)


def _stamped() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime),
            sa.Column("updated_at", sa.DateTime)]


def _soft_deleted() -> list[sa.Column]:
    return [*_stamped(), sa.Column("deleted_at", sa.DateTime),
            sa.Column("deleted", sa.Integer)]


cell_mappings = _table(
    api, "cell_mappings", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36)), sa.Column("name", sa.String(255)),
    sa.Column("database_connection", sa.Text),
    sa.Column("disabled", sa.Boolean))
host_mappings = _table(
    api, "host_mappings", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cell_id", sa.Integer), sa.Column("host", sa.String(255)),
    *_stamped())
aggregates = _table(
    api, "aggregates", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36)), sa.Column("name", sa.String(255)),
    *_stamped())
aggregate_hosts = _table(
    api, "aggregate_hosts", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("host", sa.String(255)), sa.Column("aggregate_id", sa.Integer),
    *_stamped())
aggregate_metadata = _table(
    api, "aggregate_metadata", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("aggregate_id", sa.Integer), sa.Column("key", sa.String(255)),
    sa.Column("value", sa.String(255)), *_stamped())
flavors = _table(
    api, "flavors", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(255)), sa.Column("flavorid", sa.String(255)),
    *[sa.Column(name, sa.Integer) for name in (
        "memory_mb", "vcpus", "root_gb", "ephemeral_gb", "swap")])
flavor_extra_specs = _table(
    api, "flavor_extra_specs", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("flavor_id", sa.Integer), sa.Column("key", sa.String(255)),
    sa.Column("value", sa.String(255)))
api_version = _table(api, "alembic_version",
                     sa.Column("version_num", sa.String(32)))

compute_nodes = _table(
    cell, "compute_nodes", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36)), sa.Column("host", sa.String(255)),
    sa.Column("hypervisor_hostname", sa.String(255)),
    sa.Column("hypervisor_type", sa.Text),
    sa.Column("hypervisor_version", sa.Integer),
    sa.Column("host_ip", sa.String(39)),
    *[sa.Column(name, sa.Integer) for name in (
        "vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used",
        "local_gb_used", "free_ram_mb", "free_disk_gb",
        "disk_available_least", "running_vms", "current_workload")],
    *[sa.Column(name, sa.Text) for name in (
        "cpu_info", "supported_instances", "metrics", "stats")],
    *[sa.Column(name, sa.Float) for name in (
        "cpu_allocation_ratio", "ram_allocation_ratio",
        "disk_allocation_ratio")],
    *_soft_deleted())
services = _table(
    cell, "services", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("host", sa.String(255)), sa.Column("binary", sa.String(255)),
    sa.Column("disabled", sa.Boolean),
    sa.Column("disabled_reason", sa.String(255)),
    sa.Column("forced_down", sa.Boolean),
    sa.Column("last_seen_up", sa.DateTime), *_soft_deleted())
instances = _table(
    cell, "instances", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36)), sa.Column("host", sa.String(255)),
    sa.Column("node", sa.String(255)), sa.Column("vm_state", sa.String(255)),
    sa.Column("task_state", sa.String(255)), *_soft_deleted())
migrations = _table(
    cell, "migrations", sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("instance_uuid", sa.String(36)),
    sa.Column("source_compute", sa.String(255)),
    sa.Column("source_node", sa.String(255)),
    sa.Column("dest_compute", sa.String(255)),
    sa.Column("dest_node", sa.String(255)),
    sa.Column("status", sa.String(255)), *_soft_deleted())
cell_version = _table(cell, "alembic_version",
                      sa.Column("version_num", sa.String(32)))

#: The tables of an API database this service reads.
API_TABLES = ("cell_mappings", "host_mappings", "aggregates",
              "aggregate_hosts", "aggregate_metadata")
#: The tables of a cell database this service reads.
CELL_TABLES = ("compute_nodes", "services", "instances", "migrations")


def check(conn: sa.Connection, what: str, tables: tuple[str, ...],
          version: sa.Table, revisions: tuple[str, ...], fix: str) -> None:
    """That the database of ``conn`` is nova's, at nova 34's schema or a
    later one.

    :param what: how messages name it ("[nova] api_database_connection",
        "cell cell1 (UUID)").
    :param revisions: nova 34's revisions of it, oldest first.
    :raises ConfigError: a table is missing (not nova's database), or it
        has no alembic version or one before nova 34's head (``fix``).
    """
    present = set(sa.inspect(conn).get_table_names())
    missing = [t for t in tables if t not in present]
    if missing:
        raise exception.ConfigError(
            f"{what}: not a nova database: it has no "
            f"{', '.join(missing)} table{'s' if len(missing) > 1 else ''}")
    versions = {v for (v,) in conn.execute(sa.select(version.c.version_num))} \
        if "alembic_version" in present else set()
    head = revisions[-1]
    if not versions or versions & set(revisions[:-1]):
        found = ", ".join(sorted(versions)) or "none"
        raise exception.ConfigError(
            f"{what}: nova schema version {found} is older than nova 34's "
            f"{head}; {fix}")
