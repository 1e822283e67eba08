"""Claims that expire unless confirmed; a row per server group to serialize
its claims on.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime, nullable=True))
        batch.create_index("allocations_expires_at_idx", ["expires_at"])
    op.create_table(
        "claim_groups",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("generation", sa.Integer, nullable=False,
                  server_default="0"),
    )
