"""The instances that took over a stack's claims: ``stack_instances``.

A stack placed with ``select_stack`` holds its claims under consumer uuids
derived from the stack id. When nova boots one of the stack's servers for
Heat (the boot's hints name the stack, its path and the resource), that
server's claim moves to nova's instance uuid; this table remembers which
instance took over which of the stack's consumers, so that the claim is
taken over once, a re-sent stack counts what its instances hold, and
``release_stack`` releases them too.

Revision ID: 0013
Revises: 0012
"""
from alembic import op
import sqlalchemy as sa

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stack_instances",
        # The stack's own consumer uuid: taken over at most once.
        sa.Column("consumer_uuid", sa.String(36), primary_key=True),
        sa.Column("stack_id", sa.String(36), nullable=False, index=True),
        # Nova's instance uuid: it takes over one consumer at most.
        sa.Column("instance_uuid", sa.String(36), nullable=False,
                  unique=True),
    )
