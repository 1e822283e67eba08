"""scheduler.cmd.table: the plain-text tables the commands print."""
from __future__ import annotations

from scheduler.cmd import table


def test_format_table_empty_cells_and_widths():
    text = table.format_table([{"a": "x", "b": None}, {"a": "long value"}],
                              ["a", "b"])
    assert text.splitlines() == ["a           b", "----------  -",
                                 "x", "long value"]


def test_format_table_escapes_control_characters():
    """A row another tool wrote may hold terminal escapes or line breaks:
    shown escaped, they neither steer the terminal nor break the table."""
    text = table.format_table(
        [{"name": "red\x1b[31m", "note": "two\nlines"}, {"name": "ok"}],
        ["name", "note"])
    assert text.splitlines() == [r"name         note",
                                 r"-----------  ----------",
                                 r"red\x1b[31m  two\nlines",
                                 r"ok"]
