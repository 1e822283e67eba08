"""What one cycle of the sync (:mod:`scheduler.novadb.source`) reads and
makes: the instances it asks for, what its cells answered, and where each
host is."""
from __future__ import annotations

import dataclasses
import datetime

import sqlalchemy as sa

from scheduler.nova import primitives
from scheduler.novadb import mirror
from scheduler.novadb import reading
from scheduler.novadb.cells import Cell


@dataclasses.dataclass(frozen=True)
class Wanted:
    """The instances a cycle reads: the consumers of the claims not yet
    seen in a report, and those of them moving (their migrations)."""
    consumers: set[str]
    moving: set[str]


@dataclasses.dataclass
class CellsRead:
    """What a cycle read of its cells, merged."""
    instances: dict[str, sa.Row] = dataclasses.field(default_factory=dict)
    migrations: dict[str, sa.Row] = dataclasses.field(default_factory=dict)
    services: dict[str, mirror.ServiceState] = dataclasses.field(
        default_factory=dict)
    down: set[str] = dataclasses.field(default_factory=set)
    answered: set[str] = dataclasses.field(default_factory=set)
    problems: dict[str, str] = dataclasses.field(default_factory=dict)
    since: dict[str, datetime.datetime] = dataclasses.field(
        default_factory=dict)
    services_read_at: dict[str, float] = dataclasses.field(
        default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Hosts:
    """Which cell each host's nodes were read from, and each cell's
    aggregate of its hosts (what a request kept in one cell asks for:
    :func:`scheduler.nova.primitives.cell_aggregate`)."""
    cell_of: dict[str, str]
    cell_aggregates: dict[str, reading.Aggregate]

    @classmethod
    def of(cls, reports: dict[str, tuple[str, sa.Row]],
           cells: dict[str, Cell]) -> "Hosts":
        cell_of = {row.host: cell for cell, row in reports.values()}
        members: dict[str, set[str]] = {uuid: set() for uuid in cells}
        for host, cell in cell_of.items():
            members.setdefault(cell, set()).add(host)
        aggregates = {}
        for uuid, cell in cells.items():
            agg = reading.Aggregate(primitives.cell_aggregate(uuid),
                                    f"nova cell {cell.label}",
                                    frozenset(members[uuid]), ())
            aggregates[agg.uuid] = agg
        return cls(cell_of, aggregates)

    def unmapped(self, mapped: dict[str, str]) -> list[str]:
        """The hosts the API database's host mappings do not put in the
        cell their nodes are in."""
        return sorted(h for h, c in self.cell_of.items()
                      if mapped.get(h) != c)
