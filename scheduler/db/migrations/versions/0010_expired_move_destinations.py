"""Expired move destinations: a resize's destination that expired before
its instance was reported there is remembered, not forgotten.

A move waiting for its confirm (a resize, a cold migration) is reported on
its destination only once the disk copy is over (finish_resize); a copy
longer than the claim TTL reverted the move, and the instance then
reported there took its source's claim along, at the old flavor's size. A
claim now keeps the destination its expired move gave back
(``expired_node_id`` and its size, counted on no node) until the instance
is reported there, which restores the move, or the claim is replaced or
released.

Revision ID: 0010
Revises: 0009
"""
from alembic import op
import sqlalchemy as sa

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: a plain ADD COLUMN everywhere; existing rows remember no
    # expired destination, as before.
    for name in ("expired_node_id", "expired_vcpus", "expired_memory_mb",
                 "expired_disk_gb"):
        op.add_column("allocations",
                      sa.Column(name, sa.Integer, nullable=True))
