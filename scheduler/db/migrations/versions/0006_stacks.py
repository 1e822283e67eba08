"""The stacks placed with select_stack: what each was, so a re-send is
recognised and a changed stack under the same id is refused.

Revision ID: 0006
Revises: 0004 (the integrator re-chains it after #8's 0005)
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stacks",
        sa.Column("stack_id", sa.String(36), primary_key=True),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("definition",
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"),
                  nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False,
                  server_default=sa.func.now()),
    )
