"""The plain-text tables the console scripts print."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from scheduler.admin import validation


def format_table(rows: Sequence[Mapping[str, Any]],
                 columns: Sequence[str]) -> str:
    """A plain-text table: a header line, a dashes line, one line per row.

    Each cell is ``str(row[column])`` with its control characters escaped
    (:func:`scheduler.admin.validation.escape`: a row another tool wrote
    may hold an ESC, which would steer the terminal, or a newline, which
    would break the table); a missing key or ``None`` is an empty cell.
    Columns are left-aligned, two spaces apart, trailing blanks cut.
    """
    cells = [["" if r.get(c) is None else validation.escape(str(r[c]))
              for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells])
              for i, c in enumerate(columns)]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()

    return "\n".join([line(columns), line(["-" * w for w in widths])]
                     + [line(row) for row in cells])
