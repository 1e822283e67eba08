"""A hard DELETE of a services row leaves no stamped row for a refresh to
find: count it where a hard DELETE of a node is counted (``node_deletes``),
which makes the next refresh a full read.

Revision ID: 0007
Revises: 0005
"""
from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("""CREATE OR REPLACE FUNCTION
            scheduler_count_service_delete() RETURNS trigger AS $$
        BEGIN
            UPDATE change_counter SET services = services + 1,
                node_deletes = node_deletes + 1 WHERE id = 1;
            RETURN OLD;
        END $$ LANGUAGE plpgsql""")
        return
    # IF EXISTS: MySQL commits the DROP by itself, so a run stopped before
    # the CREATE below leaves the schema at 0005 without the trigger, and
    # the next run must still get through.
    op.execute("DROP TRIGGER IF EXISTS services_count_delete")
    if dialect == "sqlite":
        op.execute("""CREATE TRIGGER services_count_delete AFTER DELETE
        ON services BEGIN
            UPDATE change_counter SET services = services + 1,
                node_deletes = node_deletes + 1 WHERE id = 1;
        END""")
    else:   # mysql
        op.execute("""CREATE TRIGGER services_count_delete AFTER DELETE
        ON services FOR EACH ROW UPDATE change_counter
            SET services = services + 1, node_deletes = node_deletes + 1
            WHERE id = 1""")
