"""Change tracking, so a refresh reads only what changed.

Every write to ``compute_nodes`` (and every admin change of a compute
``services`` row, and any change to aggregates) bumps a counter in the
single-row ``change_counter`` table, and stamps the written row with the new
value in ``change_seq``. Triggers do it, so it holds for every writer —
ours, compute agents, an operator's SQL — not only for code that remembers
to. Because the counter row is updated inside the writer's transaction, its
lock orders writers by commit: a reader that has seen stamp N has seen every
stamp below N, so "rows with change_seq > last seen" misses nothing.

On MySQL/MariaDB (InnoDB) the triggers give the same guarantee the same
way: a ``BEFORE INSERT``/``BEFORE UPDATE`` row trigger runs ``UPDATE
change_counter`` — an exclusive row lock held to the writer's commit — and
sets ``NEW.change_seq`` from the counter it just bumped (a transaction
always reads its own change, whatever the isolation level). A second
writer waits on that lock, so it can only take N+1 after the holder of N
has committed. MySQL has no ``UPDATE OF column`` nor statement-level
triggers and no trigger for several events, so the services update trigger
compares the scheduling columns itself (``<=>``, NULL-safe) and the
aggregate triggers count rows rather than statements (any change bumps the
counter, which is all the reader asks). A MySQL trigger may not write the
table it fires on, hence ``SET NEW.change_seq`` rather than SQLite's
``UPDATE``. With the binary log on, creating triggers needs the SUPER
privilege or ``log_bin_trust_function_creators=1``.

Heartbeats (``report_count``, ``last_seen_up``, ``updated_at``) are
deliberately not tracked: they change every few seconds on every host, and
liveness is read separately as "which services are down".

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Columns of services whose change matters to scheduling (not heartbeats).
_SERVICE_COLUMNS = (
    'disabled, disabled_reason, forced_down, deleted, host, "binary"')


def _sqlite_stamp(trigger: str, event: str, table: str, counter: str,
                  when: str = "") -> str:
    """An SQLite trigger that bumps ``counter`` and stamps the written row
    with its new value."""
    return f"""CREATE TRIGGER {trigger} AFTER {event} ON {table} {when}
    BEGIN
        UPDATE change_counter SET {counter} = {counter} + 1 WHERE id = 1;
        UPDATE {table} SET change_seq =
            (SELECT {counter} FROM change_counter WHERE id = 1)
            WHERE id = NEW.id;
    END"""


def _sqlite_count(trigger: str, event: str, table: str, counter: str) -> str:
    """An SQLite trigger that only bumps ``counter``."""
    return f"""CREATE TRIGGER {trigger} AFTER {event} ON {table}
    BEGIN
        UPDATE change_counter SET {counter} = {counter} + 1 WHERE id = 1;
    END"""


_SQLITE = [
    # nodes: every insert/update stamps the row; deletes only count. The
    # WHEN clause keeps the stamping UPDATE from stamping itself again.
    _sqlite_stamp("compute_nodes_stamp_insert", "INSERT", "compute_nodes",
                  "nodes"),
    _sqlite_stamp("compute_nodes_stamp_update", "UPDATE", "compute_nodes",
                  "nodes", "WHEN NEW.change_seq = OLD.change_seq"),
    _sqlite_count("compute_nodes_count_delete", "DELETE", "compute_nodes",
                  "node_deletes"),
    _sqlite_stamp("services_stamp_insert", "INSERT", "services", "services"),
    _sqlite_stamp("services_stamp_update",
                  f"UPDATE OF {_SERVICE_COLUMNS}", "services", "services"),
    _sqlite_count("services_count_delete", "DELETE", "services", "services"),
] + [
    _sqlite_count(f"{table}_count_{event.lower()}", event, table,
                  "aggregates")
    for table in ("aggregates", "aggregate_hosts", "aggregate_metadata")
    for event in ("INSERT", "UPDATE", "DELETE")
]

_POSTGRESQL = [
    """CREATE FUNCTION scheduler_stamp_node() RETURNS trigger AS $$
    BEGIN
        UPDATE change_counter SET nodes = nodes + 1 WHERE id = 1
            RETURNING nodes INTO NEW.change_seq;
        RETURN NEW;
    END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER compute_nodes_stamp BEFORE INSERT OR UPDATE
    ON compute_nodes FOR EACH ROW EXECUTE FUNCTION scheduler_stamp_node()""",
    """CREATE FUNCTION scheduler_count_node_delete() RETURNS trigger AS $$
    BEGIN
        UPDATE change_counter SET node_deletes = node_deletes + 1
            WHERE id = 1;
        RETURN OLD;
    END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER compute_nodes_count_delete AFTER DELETE
    ON compute_nodes FOR EACH ROW
    EXECUTE FUNCTION scheduler_count_node_delete()""",
    """CREATE FUNCTION scheduler_stamp_service() RETURNS trigger AS $$
    BEGIN
        UPDATE change_counter SET services = services + 1 WHERE id = 1
            RETURNING services INTO NEW.change_seq;
        RETURN NEW;
    END $$ LANGUAGE plpgsql""",
    f"""CREATE TRIGGER services_stamp BEFORE INSERT OR UPDATE OF
    {_SERVICE_COLUMNS} ON services
    FOR EACH ROW EXECUTE FUNCTION scheduler_stamp_service()""",
    """CREATE FUNCTION scheduler_count_service_delete() RETURNS trigger AS $$
    BEGIN
        UPDATE change_counter SET services = services + 1 WHERE id = 1;
        RETURN OLD;
    END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER services_count_delete AFTER DELETE ON services
    FOR EACH ROW EXECUTE FUNCTION scheduler_count_service_delete()""",
    """CREATE FUNCTION scheduler_count_aggregates() RETURNS trigger AS $$
    BEGIN
        UPDATE change_counter SET aggregates = aggregates + 1 WHERE id = 1;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
] + [
    f"""CREATE TRIGGER {table}_count AFTER INSERT OR UPDATE OR DELETE
    ON {table} FOR EACH STATEMENT EXECUTE FUNCTION scheduler_count_aggregates()"""
    for table in ("aggregates", "aggregate_hosts", "aggregate_metadata")
]

# MySQL: "binary" is a reserved word, quoted with backticks.
_MYSQL_SERVICE_COLUMNS = ("disabled", "disabled_reason", "forced_down",
                          "deleted", "host", "`binary`")


def _mysql_stamp(trigger: str, event: str, table: str, counter: str,
                 when: str = "") -> str:
    """A MySQL row trigger that bumps ``counter`` and stamps the row being
    written with its new value (``when``: an extra condition)."""
    body = f"""UPDATE change_counter SET {counter} = {counter} + 1
            WHERE id = 1;
        SET NEW.change_seq =
            (SELECT {counter} FROM change_counter WHERE id = 1);"""
    if when:
        body = f"IF {when} THEN {body} END IF;"
    return f"""CREATE TRIGGER {trigger} BEFORE {event} ON {table}
    FOR EACH ROW BEGIN {body} END"""


def _mysql_count(trigger: str, event: str, table: str, counter: str) -> str:
    """A MySQL row trigger that only bumps ``counter``."""
    return f"""CREATE TRIGGER {trigger} AFTER {event} ON {table}
    FOR EACH ROW UPDATE change_counter SET {counter} = {counter} + 1
        WHERE id = 1"""


_MYSQL = [
    _mysql_stamp("compute_nodes_stamp_insert", "INSERT", "compute_nodes",
                 "nodes"),
    _mysql_stamp("compute_nodes_stamp_update", "UPDATE", "compute_nodes",
                 "nodes"),
    _mysql_count("compute_nodes_count_delete", "DELETE", "compute_nodes",
                 "node_deletes"),
    _mysql_stamp("services_stamp_insert", "INSERT", "services", "services"),
    _mysql_stamp("services_stamp_update", "UPDATE", "services", "services",
                 "NOT (" + " AND ".join(f"NEW.{c} <=> OLD.{c}"
                                        for c in _MYSQL_SERVICE_COLUMNS)
                 + ")"),
    _mysql_count("services_count_delete", "DELETE", "services", "services"),
] + [
    _mysql_count(f"{table}_count_{event.lower()}", event, table, "aggregates")
    for table in ("aggregates", "aggregate_hosts", "aggregate_metadata")
    for event in ("INSERT", "UPDATE", "DELETE")
]


def _trigger_name(statement: str) -> str:
    return statement.split("CREATE TRIGGER ", 1)[1].split(None, 1)[0]


def upgrade() -> None:
    # MySQL/MariaDB commit every DDL statement by itself: a run that failed
    # half-way (its triggers refused for want of the TRIGGER or SUPER
    # privilege, see above) kept the table and columns it had made while
    # alembic_version stayed at 0002. Each step is skipped when it is done
    # and the triggers are made again, so 'db sync' after the fix finishes
    # the job. (SQLite and PostgreSQL roll a failed run back whole.)
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    if not inspector.has_table("change_counter"):
        op.create_table(
            "change_counter",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("nodes", sa.BigInteger, nullable=False,
                      server_default="0"),
            sa.Column("node_deletes", sa.BigInteger, nullable=False,
                      server_default="0"),
            sa.Column("services", sa.BigInteger, nullable=False,
                      server_default="0"),
            sa.Column("aggregates", sa.BigInteger, nullable=False,
                      server_default="0"),
        )
    if not bind.execute(sa.text(
            "SELECT COUNT(*) FROM change_counter WHERE id = 1")).scalar():
        op.execute("INSERT INTO change_counter (id) VALUES (1)")
    for table in ("compute_nodes", "services"):
        columns = {c["name"] for c in inspector.get_columns(table)}
        indexes = {i["name"] for i in inspector.get_indexes(table)}
        with op.batch_alter_table(table) as batch:
            if "change_seq" not in columns:
                batch.add_column(sa.Column("change_seq", sa.BigInteger,
                                           nullable=False,
                                           server_default="0"))
            if f"{table}_change_seq_idx" not in indexes:
                batch.create_index(f"{table}_change_seq_idx",
                                   ["change_seq"])
    dialect = bind.dialect.name
    statements = {"sqlite": _SQLITE, "postgresql": _POSTGRESQL,
                  "mysql": _MYSQL}.get(dialect)
    if statements is None:
        raise RuntimeError(f"change tracking has no triggers for {dialect}; "
                           f"SQLite, PostgreSQL and MySQL/MariaDB are "
                           f"supported")
    for statement in statements:
        if dialect == "mysql":
            op.execute(f"DROP TRIGGER IF EXISTS {_trigger_name(statement)}")
        op.execute(statement)
