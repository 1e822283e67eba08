"""scheduler.cmd.table: the plain-text tables the commands print."""
from __future__ import annotations

from scheduler.cmd import table


def test_format_table_empty_cells_and_widths():
    text = table.format_table([{"a": "x", "b": None}, {"a": "long value"}],
                              ["a", "b"])
    assert text.splitlines() == ["a           b", "----------  -",
                                 "x", "long value"]
