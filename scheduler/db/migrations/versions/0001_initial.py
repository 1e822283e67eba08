"""Initial schema: services, compute_nodes, aggregates, allocations.

Revision ID: 0001
Revises:
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps_soft_delete() -> list:
    return [
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.Column("deleted_at", sa.DateTime, nullable=True),
        sa.Column("deleted", sa.Integer, nullable=False, server_default="0"),
    ]


def upgrade() -> None:
    op.create_table(
        "services",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=True, unique=True),
        sa.Column("host", sa.String(255), nullable=True, index=True),
        sa.Column("binary", sa.String(255), nullable=True),
        sa.Column("topic", sa.String(255), nullable=True),
        sa.Column("report_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("disabled_reason", sa.String(255), nullable=True),
        sa.Column("forced_down", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("last_seen_up", sa.DateTime, nullable=True),
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
        *_timestamps_soft_delete(),
        sa.UniqueConstraint("host", "binary", "deleted",
                            name="uniq_services0host0binary0deleted"),
    )
    op.create_table(
        "compute_nodes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=True, unique=True),
        sa.Column("service_id", sa.Integer, nullable=True),
        sa.Column("host", sa.String(255), nullable=True, index=True),
        sa.Column("hypervisor_hostname", sa.String(255), nullable=True),
        sa.Column("hypervisor_type", sa.Text, nullable=False),
        sa.Column("hypervisor_version", sa.Integer, nullable=False),
        sa.Column("host_ip", sa.String(39), nullable=True),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("local_gb", sa.Integer, nullable=False),
        sa.Column("vcpus_used", sa.Integer, nullable=False),
        sa.Column("memory_mb_used", sa.Integer, nullable=False),
        sa.Column("local_gb_used", sa.Integer, nullable=False),
        sa.Column("free_ram_mb", sa.Integer, nullable=True),
        sa.Column("free_disk_gb", sa.Integer, nullable=True),
        sa.Column("disk_available_least", sa.Integer, nullable=True),
        sa.Column("running_vms", sa.Integer, nullable=True),
        sa.Column("current_workload", sa.Integer, nullable=True),
        sa.Column("cpu_info", sa.Text, nullable=False),
        sa.Column("supported_instances", sa.Text, nullable=True),
        sa.Column("metrics", sa.Text, nullable=True),
        sa.Column("stats", sa.Text, nullable=True),
        sa.Column("cpu_allocation_ratio", sa.Float, nullable=True),
        sa.Column("ram_allocation_ratio", sa.Float, nullable=True),
        sa.Column("disk_allocation_ratio", sa.Float, nullable=True),
        sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
        *_timestamps_soft_delete(),
        sa.UniqueConstraint(
            "host", "hypervisor_hostname", "deleted",
            name="uniq_compute_nodes0host0hypervisor_hostname0deleted"),
    )
    op.create_table(
        "aggregates",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=True, unique=True),
        sa.Column("name", sa.String(255), nullable=False),
        *_timestamps_soft_delete(),
    )
    op.create_table(
        "aggregate_hosts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"),
                  nullable=False),
        *_timestamps_soft_delete(),
        sa.UniqueConstraint("host", "aggregate_id", "deleted",
                            name="uniq_aggregate_hosts0host0aggregate_id0deleted"),
    )
    op.create_table(
        "aggregate_metadata",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"),
                  nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        *_timestamps_soft_delete(),
        sa.UniqueConstraint("aggregate_id", "key", "deleted",
                            name="uniq_aggregate_metadata0aggregate_id0key0deleted"),
    )
    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("consumer_uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("compute_node_id", sa.Integer, nullable=False, index=True),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("group_uuid", sa.String(36), nullable=True, index=True),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("disk_gb", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False,
                  server_default=sa.func.now()),
    )
