"""Which of nova's cells are scheduled to, and how they are reached."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler.novadb import cells
from scheduler.novadb import schema

CELL1 = "5b0f6c3e-2f0d-4a8e-9c41-7d2e8b1a9f61"
CELL2 = "5b0f6c3e-2f0d-4a8e-9c41-7d2e8b1a9f62"


@pytest.fixture
def api():
    engine = sa.create_engine("sqlite://")
    schema.cell_mappings.create(engine)
    yield engine
    engine.dispose()


def mappings(api, *rows) -> sa.Connection:
    with api.begin() as conn:
        conn.execute(schema.cell_mappings.insert(), [
            dict(zip(("uuid", "name", "database_connection", "disabled"),
                     row)) for row in rows])
    return api.connect()


def test_cell0_and_disabled_cells_are_not_scheduled_to(api):
    with mappings(api,
                  (cells.CELL0_UUID, "cell0", "sqlite:///c0", False),
                  (CELL1, "cell1", "mysql+pymysql://nova:pw@db/c1", False),
                  (CELL2, "cell2", "mysql+pymysql://nova:pw@db/c2", True)
                  ) as conn:
        assert cells.enabled_cells(conn) == [
            cells.Cell(CELL1, "cell1", "mysql+pymysql://nova:pw@db/c1")]


def test_a_read_only_user_replaces_novas_own(api):
    with mappings(api, (CELL1, "cell1", "mysql+pymysql://nova:pw@db/c1",
                        False)) as conn:
        [cell] = cells.enabled_cells(conn, "reader", "s3cr:t")
    assert cell.url == "mysql+pymysql://reader:s3cr%3At@db/c1"


def test_a_template_url_is_refused_naming_the_cell(api):
    with mappings(api, (CELL1, "cell1", "{scheme}://{username}@db/c1",
                        False)) as conn:
        with pytest.raises(exception.ConfigError,
                           match=rf"^cell cell1 \({CELL1}\): its "
                                 r"database_connection is a template"):
            cells.enabled_cells(conn)
