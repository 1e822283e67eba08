"""SQLite's ``INSERT OR REPLACE`` (an agent's upsert) deletes the row it
replaces without firing delete triggers (unless the writer's connection
set ``PRAGMA recursive_triggers``), so the replaced node left no trace: a
refresh kept it beside its successor, under its old id. Count such an
insert as a hard delete of a node (``node_deletes``), which makes the next
refresh a full read. A plain INSERT that conflicts fails, and its
trigger's update is undone with it; MySQL's REPLACE and PostgreSQL fire
their delete triggers by themselves.

Revision ID: 0008
Revises: 0007
"""
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # The unique keys of compute_nodes: the row a REPLACE would delete.
    op.execute("""CREATE TRIGGER compute_nodes_count_replace BEFORE INSERT
    ON compute_nodes
    WHEN EXISTS (SELECT 1 FROM compute_nodes WHERE id = NEW.id
                 OR uuid = NEW.uuid
                 OR (host = NEW.host
                     AND hypervisor_hostname = NEW.hypervisor_hostname
                     AND deleted = NEW.deleted))
    BEGIN
        UPDATE change_counter SET node_deletes = node_deletes + 1
            WHERE id = 1;
    END""")
