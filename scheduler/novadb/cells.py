"""Nova's cells: the API database's ``cell_mappings``, each enabled cell
but cell0 with an engine of its own, read-only.

Nova keeps cell0 (instances that failed to schedule, no computes) and
disabled cells out of scheduling; so does this service.
"""
from __future__ import annotations

import dataclasses

import sqlalchemy as sa

from scheduler import exception
from scheduler.novadb import schema

#: Nova's fixed uuid of cell0 (``objects.CellMapping.CELL0_UUID``).
CELL0_UUID = "00000000-0000-0000-0000-000000000000"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One enabled cell of nova: its mapping, and how messages name it."""
    uuid: str
    name: str
    url: str

    @property
    def label(self) -> str:
        """``cell1 (uuid)``, or the uuid alone for a cell without a name."""
        return f"{self.name} ({self.uuid})" if self.name else self.uuid


def enabled_cells(api_conn: sa.Connection, username: str = "",
                  password: str = "") -> list[Cell]:
    """The cells of nova's API database that nova schedules to: every
    mapping but cell0 and the disabled ones, by uuid; each URL with
    ``username`` and ``password`` in place of the mapping's own, if given
    (``[nova] cell_database_username``: a read-only user).

    :raises ConfigError: a cell's ``database_connection`` is a template
        (``{username}``...) that nova expands from its own ``[database]``
        options, which this service does not have; naming the cell.
    """
    m = schema.cell_mappings
    rows = api_conn.execute(
        sa.select(m.c.uuid, m.c.name, m.c.database_connection)
        .where(m.c.uuid != CELL0_UUID,
               sa.or_(m.c.disabled.is_(None), m.c.disabled == sa.false()))
        .order_by(m.c.uuid)).all()
    cells = []
    for row in rows:
        cell = Cell(row.uuid, row.name or "", row.database_connection or "")
        if username and "{" not in cell.url:
            try:
                url = sa.engine.make_url(cell.url)
            except sa.exc.ArgumentError:
                pass        # foreign.reader_engine names the cell and the problem
            else:
                if url.get_backend_name() != "sqlite":   # a file: no user
                    url = url.set(username=username,
                                  password=password or None)
                    cell = dataclasses.replace(
                        cell, url=url.render_as_string(hide_password=False))
        if "{" in cell.url:
            raise exception.ConfigError(
                f"cell {cell.label}: its database_connection is a template "
                f"nova expands from its own [database] options; store the "
                f"full URL (nova-manage cell_v2 update_cell "
                f"--cell_uuid {cell.uuid} --database_connection URL)")
        cells.append(cell)
    return cells
