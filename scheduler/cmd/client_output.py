"""How ``scheduler-client`` prints a result without ``--json``: a table
per command (set as the parsed command's ``render``).
"""
from __future__ import annotations

from typing import Any

from scheduler.cmd import table

SELECT_COLUMNS = ["uuid", "host", "nodename", "vcpus", "memory_mb", "disk_gb"]
STACK_COLUMNS = ["resource", "host", "nodename", "uuid", "vcpus",
                 "memory_mb", "disk_gb"]
#: A filter step's hosts before it and those that passed it ("out" in the
#: RPC result), why the others did not and a few of them by name.
FILTER_COLUMNS = ["name", "in", "passed", "reason", "sample"]


def _number(value: Any) -> Any:
    """Floats to three decimals for tables; anything else unchanged."""
    return f"{value:.3f}" if isinstance(value, float) else value


def render_select(result: list[dict[str, Any]]) -> str:
    """One row per instance; an ``alternates`` column (their hosts) when
    the result carries alternates."""
    columns = list(SELECT_COLUMNS)
    if any("alternates" in d for d in result):
        columns.append("alternates")
    rows = []
    for d in result:
        row = {**(d.get("allocation") or {}), "uuid": d.get("uuid"),
               "host": d.get("host"), "nodename": d.get("nodename")}
        if "alternates" in d:
            row["alternates"] = ", ".join(
                a.get("host", "") for a in d["alternates"] or [])
        rows.append(row)
    return table.format_table(rows, columns)


def render_rank(result: dict[str, Any]) -> str:
    """The hosts best first (host, nodename, weight, one column per
    weigher), a blank line, then what each filter step removed."""
    hosts = result.get("hosts") or []
    weighers: list[str] = []
    for h in hosts:
        weighers += [w for w in h.get("weights") or {} if w not in weighers]
    rows = [{k: _number(v) for k, v in
             {**(h.get("weights") or {}), "host": h.get("host"),
              "nodename": h.get("nodename"),
              "weight": h.get("weight")}.items()} for h in hosts]
    steps = [{**s, "passed": s.get("out"),
              "sample": ", ".join(s.get("sample") or [])}
             for s in result.get("filters") or []]
    parts = [table.format_table(rows, ["host", "nodename", "weight"]
                                + weighers)]
    if "total" in result:
        parts.append(f"{len(hosts)} shown of {result['total']} hosts")
    parts += ["", table.format_table(steps, FILTER_COLUMNS)]
    return "\n".join(parts)


def render_stack(result: dict[str, Any]) -> str:
    """The stack id, the creation batches, then one row per server in
    creation order (:func:`_member` labels it)."""
    lines = [f"stack {result.get('stack_id')}"
             + (" (dry run: nothing claimed)" if result.get("dry_run")
                else ""),
             "order:"]
    lines += [f"  {i}. {', '.join(batch)}"
              for i, batch in enumerate(result.get("order") or [], 1)]
    placed = result.get("resources") or {}
    # Servers in creation order, as Heat would create them.
    names = [n for batch in result.get("order") or [] for n in batch]
    names += sorted(set(placed) - set(names))
    rows = [{**(d.get("allocation") or {}),
             "resource": _member(name, i, len(placed.get(name) or [])),
             "uuid": d.get("uuid"), "host": d.get("host"),
             "nodename": d.get("nodename")}
            for name in names
            for i, d in enumerate(placed.get(name) or [])]
    return "\n".join(lines + ["", table.format_table(rows, STACK_COLUMNS)])


def _member(name: str, index: int, count: int) -> str:
    """A resource's row label: its name, with the instance's index when
    it has several (a ResourceGroup's servers: ``web[0]``, ``web[1]``)."""
    return f"{name}[{index}]" if count > 1 else name


def render_confirm_move(result: int) -> str:
    return f"confirmed {result} move(s)"


def render_revert_move(result: int) -> str:
    return f"reverted {result} move(s)"


def render_release(result: int) -> str:
    return f"released {result}"


def render_confirm(result: int) -> str:
    return f"confirmed {result}"


def render_ping(result: dict[str, str]) -> str:
    return table.format_table([result], ["host", "version", "driver"])
