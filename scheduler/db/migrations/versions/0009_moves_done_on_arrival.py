"""Moves done on arrival: a move with no confirm step gives its source back
once its instance is reported on its destination.

Nova's live migration and evacuation (and unshelve) never send the cast a
resize's confirm does (the source saying the instance left it): their
source was held for good. A claim now records, when its move is claimed,
whether the instance seen on the destination is the end of the move
(``confirm_on_arrival``); false for a move waiting for its confirm or
revert, and for a claim not moving.

Revision ID: 0009
Revises: 0008
"""
from alembic import op
import sqlalchemy as sa

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NOT NULL with a server default: a plain ADD COLUMN on SQLite,
    # PostgreSQL and MySQL alike; existing rows (moves claimed before this
    # revision) keep waiting for their confirm, as they did.
    op.add_column("allocations",
                  sa.Column("confirm_on_arrival", sa.Boolean, nullable=False,
                            server_default=sa.false()))
