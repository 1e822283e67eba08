"""Claims a nova compute's report includes: ``allocations.reported_node_id``
and ``source_reported``.

With nova's databases as the host source (``[nova]
api_database_connection``), a node's usage is its compute's report plus
the claims the report does not include yet. A claim remembers the node
whose report was seen to include it (it differs from ``compute_node_id``
for a claim new, moved or relocated: still counted on top), and a moving
claim whether its source is its report's; what a claim gives back when it
ends is only what it counted on top. Unused with our own schema: every
claim counts on top, as before.

Revision ID: 0012
Revises: 0011
"""
from alembic import op
import sqlalchemy as sa

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: a plain ADD COLUMN everywhere; no claim is seen yet.
    op.add_column("allocations",
                  sa.Column("reported_node_id", sa.Integer, nullable=True))
    op.add_column("allocations",
                  sa.Column("source_reported", sa.Boolean, nullable=False,
                            server_default=sa.false()))
