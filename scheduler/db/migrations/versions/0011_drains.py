"""Drains: a host's instances moved off it all or nothing, and the server
groups' policies a drain needs to move their members.

``drains`` holds one row per host being drained (the plan it applied, so
the same drain applied again returns it); ``drain_moves`` one row per
planned move, marked ``begun`` once the move's own scheduler request was
answered (``cancel_drain`` reverts only the moves not begun). A hard
group's claims already write its ``claim_groups`` row; the row now keeps
the group's policy too, which a drain reads to move members as their
group allows (rows written before keep NULL: such a group's members move
as if in no group until its next claim).

Revision ID: 0011
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("claim_groups",
                  sa.Column("policy", sa.String(32), nullable=True))
    op.add_column("claim_groups",
                  sa.Column("max_per_host", sa.Integer, nullable=True))
    op.create_table(
        "drains",
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("same_aggregate", sa.Boolean, nullable=False),
        sa.Column("definition",
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"),
                  nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False,
                  server_default=sa.func.now()),
    )
    op.create_table(
        "drain_moves",
        sa.Column("consumer_uuid", sa.String(36), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False, index=True),
        sa.Column("begun", sa.Boolean, nullable=False,
                  server_default=sa.false()),
    )
