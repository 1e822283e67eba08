"""Moves: a claim may hold its source while it moves.

A consumer being moved (cold/live migration, resize, evacuation) holds its
destination in the allocation's usual columns and keeps its source in the
``source_*`` columns until the move is confirmed (the source is given back)
or reverted (the destination is). One row per consumer still: the unique
``consumer_uuid`` keeps meaning "a consumer holds one claim".

Revision ID: 0005
Revises: 0006 (0006, stacks, landed on main first; chained after it so a
database already at 0006 upgrades without a second head)
"""
from alembic import op
import sqlalchemy as sa

revision = "0005"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable columns without server defaults: plain ADD COLUMN on SQLite,
    # PostgreSQL and MySQL alike (no table rebuild).
    for name in ("source_node_id", "source_vcpus", "source_memory_mb",
                 "source_disk_gb"):
        op.add_column("allocations",
                      sa.Column(name, sa.Integer, nullable=True))
    op.create_index("allocations_source_node_id_idx", "allocations",
                    ["source_node_id"])
