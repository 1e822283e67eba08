"""The results: medians and p99s (numpy), one table, a JSON file with
every sample, a PNG of latency against host count, and the README section
that shows them.

Every latency row gets its ratio to the bus's own round trip measured in
the same run (the echo call at concurrency 1, same fleet size; for an
end-to-end row, the echo that took turns with it: :func:`bus_row`);
the concurrency-8 rows compare requests per second the other way round
(echo req/s ÷ scheduler req/s), so in both cases the ratio is how many
times the bus's own cost the scheduler costs. The end-to-end rows also
show the serving processes' CPU per call (benchmarks/cpu.py) and its ratio
to the echo server's at the same concurrency. A second table splits the
select rows' mean round trip into what the servers' handler took, stage by
stage, and the rest (benchmarks/service_split.py).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import re
from typing import Callable, Sequence

import numpy as np

from benchmarks import machine
from benchmarks import service_split
from benchmarks.timing import Row

#: measure key -> (label, kind, group); table and plot order. The table
#: leaves a blank line between groups.
MEASURES = {
    "refresh_nothing": ("refresh, nothing changed", "latency", "in-process"),
    "refresh_changed": ("refresh, 1% of nodes changed", "latency",
                        "in-process"),
    "refresh_full": ("refresh, full read", "latency", "in-process"),
    "decide": ("decide: refresh + filter + weigh + choose", "latency",
               "in-process"),
    "claim_sqlite": ("claim, SQLite", "latency", "claim"),
    "claim_postgresql": ("claim, PostgreSQL", "latency", "claim"),
    "claim_mysql": ("claim, MariaDB", "latency", "claim"),
    "claim_c8_sqlite": ("8 threads claiming, SQLite", "claims", "claim-8"),
    "claim_c8_batched_sqlite": ("8 threads claiming, SQLite, group commit",
                                "claims", "claim-8"),
    "claim_c8_postgresql": ("8 threads claiming, PostgreSQL", "claims",
                            "claim-8"),
    "claim_c8_batched_postgresql": (
        "8 threads claiming, PostgreSQL, group commit", "claims", "claim-8"),
    "claim_c8_mysql": ("8 threads claiming, MariaDB", "claims", "claim-8"),
    "claim_c8_batched_mysql": ("8 threads claiming, MariaDB, group commit",
                               "claims", "claim-8"),
    "echo_c1": ("bus: echo call, concurrency 1", "latency", "rpc-1"),
    "ping_c1": ("RPC ping, concurrency 1", "latency", "rpc-1"),
    "select_c1": ("RPC select_destinations, concurrency 1", "latency",
                  "rpc-1"),
    "echo_c1_postgresql": ("bus: echo call, c1, beside PostgreSQL",
                           "latency", "rpc-1"),
    "ping_c1_postgresql": ("RPC ping, c1, PostgreSQL", "latency", "rpc-1"),
    "select_c1_postgresql": ("RPC select_destinations, c1, PostgreSQL",
                             "latency", "rpc-1"),
    "echo_c1_mysql": ("bus: echo call, c1, beside MariaDB", "latency",
                      "rpc-1"),
    "ping_c1_mysql": ("RPC ping, c1, MariaDB", "latency", "rpc-1"),
    "select_c1_mysql": ("RPC select_destinations, c1, MariaDB", "latency",
                        "rpc-1"),
    "echo_c8": ("bus: echo calls, concurrency 8", "throughput", "rpc-8"),
    "select_c8": ("RPC select_destinations, concurrency 8", "throughput",
                  "rpc-8"),
    "echo_c8_postgresql": ("bus: echo calls, c8, beside PostgreSQL",
                           "throughput", "rpc-8"),
    "select_c8_postgresql": ("RPC select_destinations, c8, PostgreSQL",
                             "throughput", "rpc-8"),
    "echo_c8_mysql": ("bus: echo calls, c8, beside MariaDB", "throughput",
                      "rpc-8"),
    "select_c8_mysql": ("RPC select_destinations, c8, MariaDB",
                        "throughput", "rpc-8"),
}
#: The bus row each kind is compared with; "claims" (claims/s in process)
#: has none. An end-to-end row has its own: see :func:`bus_row`.
BUS = {"latency": "echo_c1", "throughput": "echo_c8"}


def bus_row(measure: str, kind: str) -> str | None:
    """The measure a row's ratio is taken against: for an end-to-end row
    (``select_…``, ``ping_…``, ``echo_…``) the echo row that took turns
    with it, for the in-process rows the run's echo of their kind."""
    if measure.startswith(("select_", "ping_", "echo_")):
        return "echo_" + measure.split("_", 1)[1]
    return BUS.get(kind)

TABLE = "table.txt"
JSON = "results.json"
PLOT = "latency.png"
README_BEGIN = ".. begin-results (written by benchmarks/run.py --update-readme)"
README_END = ".. end-results"


def summarize(rows: list[Row]) -> list[dict]:
    """One dict per row: n, median and p99 in ms, req/s, ratio to the bus,
    in MEASURES order, then by host count."""
    order = list(MEASURES)
    out = []
    for row in sorted(rows, key=lambda r: (order.index(r.measure),
                                           r.hosts)):
        samples = np.array(row.samples) * 1000.0
        median = p99 = None
        if samples.size:
            median, p99 = (float(v) for v in np.percentile(samples,
                                                           [50, 99]))
        out.append({
            "measure": row.measure, "label": MEASURES[row.measure][0],
            "kind": MEASURES[row.measure][1], "hosts": row.hosts,
            "n": int(samples.size), "concurrency": row.concurrency,
            "median_ms": median, "p99_ms": p99,
            "requests_per_second": row.requests_per_second,
            "wall_s": row.wall, "errors": row.errors,
            "server_cpu_ms": row.cpu_ms_per_call,
            "mean_ms": float(samples.mean()) if samples.size else None,
            "service_split_ms": None if row.service_split is None else {
                k: v * 1000.0 for k, v in row.service_split.items()},
            "notes": list(row.notes),
            "samples_ms": [round(float(v), 4) for v in samples]})
    by_key = {(s["measure"], s["hosts"]): s for s in out}
    for s in out:
        bus = by_key.get((bus_row(s["measure"], s["kind"]), s["hosts"]))
        s["bus_ratio"] = _ratio(s, bus)
        theirs = bus["server_cpu_ms"] if bus else None
        s["cpu_bus_ratio"] = (s["server_cpu_ms"] / theirs
                              if s["server_cpu_ms"] is not None and theirs
                              else None)
    return out


def _ratio(s: dict, bus: dict | None) -> float | None:
    if bus is None:
        return None
    if s["kind"] == "throughput":
        mine, theirs = s["requests_per_second"], bus["requests_per_second"]
        return theirs / mine if mine and theirs else None
    mine, theirs = s["median_ms"], bus["median_ms"]
    return mine / theirs if mine is not None and theirs else None


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1:
        return f"{value:.3f}"
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def _num(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}"
    if value < 1:
        return f"{value:.2f}"
    return f"{value:.1f}"


def _aligned(header: Sequence[str], lines: list[Sequence[str]],
             right: set[int]
             ) -> tuple[Callable[[Sequence[str]], str], list[int]]:
    """A formatter of a line's cells into columns as wide as the widest
    of ``header`` and ``lines`` (right-aligned at the indexes ``right``),
    and those widths."""
    widths = [max(len(r[i]) for r in [header, *lines])
              for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))
                         ).rstrip()
    return fmt, widths


def table(summary: list[dict]) -> str:
    """The one table: a line per measure and fleet size; notes as
    numbered footnotes below it."""
    notes: list[str] = []
    header = ("measure", "hosts", "n", "median ms", "p99 ms", "req/s",
              "× bus", "cpu ms", "cpu × bus", "notes")
    lines = []
    previous = None
    for s in summary:
        refs = []
        for note in s["notes"]:
            if note not in notes:
                notes.append(note)
            refs.append(f"[{notes.index(note) + 1}]")
        lines.append((
            s["label"] if s["measure"] != previous else "",
            f"{s['hosts']:,}", str(s["n"]), _ms(s["median_ms"]),
            _ms(s["p99_ms"]), _num(s["requests_per_second"]),
            _num(s["bus_ratio"]), _ms(s["server_cpu_ms"]),
            _num(s["cpu_bus_ratio"]), " ".join(refs)))
        previous = s["measure"]
    fmt, widths = _aligned(header, lines, right={1, 2, 3, 4, 5, 6, 7, 8})
    out = [fmt(header), fmt(["-" * w for w in widths[:-1]] + [""])]
    previous = None
    for s, line in zip(summary, lines):
        if previous is not None and \
                MEASURES[s["measure"]][2] != MEASURES[previous][2]:
            out.append("")
        out.append(fmt(line))
        previous = s["measure"]
    out += [f"[{i}] {note}" for i, note in enumerate(notes, 1)]
    return "\n".join(out)


def split_table(summary: list[dict]) -> str:
    """The select rows' mean round trip, split: outside the servers'
    handler (bus, oslo.messaging, client), inside it, and inside it by
    stage; "rest" is the handler's time in no stage (its own code, and
    at concurrency 8 the wait for its worker's planning cycle). Empty
    when no row has a split."""
    stages = service_split.STAGES
    header = ("measure", "hosts", "round trip", "outside", "handler",
              *stages, "rest")
    lines = []
    for s in summary:
        split = s.get("service_split_ms")
        if split is None or s["mean_ms"] is None:
            continue
        handler = split[service_split.SERVICE]
        lines.append((
            s["label"], f"{s['hosts']:,}", _ms(s["mean_ms"]),
            _ms(s["mean_ms"] - handler), _ms(handler),
            *(_ms(split[name]) for name in stages),
            _ms(handler - sum(split[name] for name in stages))))
    if not lines:
        return ""
    fmt, widths = _aligned(header, lines, right=set(range(1, len(header))))
    return "\n".join([
        "Mean ms per select_destinations, from the servers' own stage "
        "histograms:", "", fmt(header), fmt(["-" * w for w in widths]),
        *(fmt(line) for line in lines)])


def plot(summary: list[dict], meta: dict, path: Path) -> None:
    """Latency (median solid, p99 dashed) against host count, log-log;
    beside it requests/s at concurrency 8."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib import ticker

    fig, (lat, thr) = plt.subplots(
        1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [2.2, 1]})
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colors: dict[str, str] = {}

    def color(measure: str, kind: str) -> str:
        # A select row and the echo it took turns with share a colour (the
        # echo dotted); every other row has its own.
        key = bus_row(measure, kind) if measure.startswith(
            ("select_", "echo_")) else measure
        return colors.setdefault(key, cycle[len(colors) % len(cycle)])

    hosts_seen: set[int] = set()
    latency = [m for m, (_, kind, _) in MEASURES.items() if kind == "latency"]
    for measure in latency:
        points = [s for s in summary
                  if s["measure"] == measure and s["median_ms"] is not None]
        if not points:
            continue
        xs = [s["hosts"] for s in points]
        hosts_seen.update(xs)
        color_of = color(measure, "latency")
        style = ":" if measure.startswith("echo") else "-"
        lat.plot(xs, [s["median_ms"] for s in points], style, marker="o",
                 color=color_of, label=MEASURES[measure][0])
        lat.plot(xs, [s["p99_ms"] for s in points], "--", linewidth=0.8,
                 color=color_of, alpha=0.7)
    lat.set_xscale("log")
    lat.set_yscale("log")
    lat.set_xlabel("hosts")
    lat.set_ylabel("ms per call (median ●, p99 dashed)")
    lat.set_title("latency")
    lat.grid(True, which="both", alpha=0.3)
    lat.legend(fontsize=8, loc="upper left")

    for measure in (m for m, (_, kind, _) in MEASURES.items()
                    if kind == "throughput"):
        points = [s for s in summary if s["measure"] == measure
                  and s["requests_per_second"] is not None]
        if not points:
            continue
        xs = [s["hosts"] for s in points]
        hosts_seen.update(xs)
        thr.plot(xs, [s["requests_per_second"] for s in points],
                 ":" if measure.startswith("echo") else "-", marker="s",
                 color=color(measure, "throughput"),
                 label=MEASURES[measure][0])
    thr.set_xscale("log")
    thr.set_yscale("log")
    thr.set_xlabel("hosts")
    thr.set_ylabel("requests/s")
    thr.set_title("sustained, concurrency 8")
    thr.grid(True, which="both", alpha=0.3)
    thr.legend(fontsize=8, loc="lower left")
    if hosts_seen:
        for ax in (lat, thr):
            ax.set_xticks(sorted(hosts_seen))
            ax.set_xticklabels([f"{h:,}" for h in sorted(hosts_seen)])
            ax.xaxis.set_minor_locator(ticker.NullLocator())
    for ax in (lat, thr):
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(
            lambda v, _: f"{v:,g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    fig.suptitle(f"scheduler benchmarks — {meta['date']}\n"
                 f"{machine.one_line(meta)}; commit {meta['commit']}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(rows: list[Row], meta: dict, options: dict, out: Path
          ) -> tuple[str, dict[str, Path]]:
    """Table, JSON and PNG into ``out``; returns the table and the paths."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    text = "\n\n".join(part for part in (table(summary),
                                          split_table(summary)) if part)
    paths = {"table": out / TABLE, "json": out / JSON, "plot": out / PLOT}
    paths["table"].write_text(_heading(meta) + "\n\n" + text + "\n")
    paths["json"].write_text(json.dumps(
        {"meta": meta, "options": options, "rows": summary}, indent=1))
    plot(summary, meta, paths["plot"])
    return text, paths


def _heading(meta: dict) -> str:
    return (f"{meta['date']} on {machine.one_line(meta)}; "
            f"commit {meta['commit']}")


def update_readme(readme: Path, text: str, meta: dict, command: str,
                  plot_path: Path) -> None:
    """Replace the results section of ``readme`` (between its markers)."""
    image = os.path.relpath(plot_path, readme.parent)
    body = "\n".join([
        README_BEGIN, "",
        f"Last full run: {_heading(meta)}, with ``{command}``::", "",
        *[f"    {line}".rstrip() for line in text.splitlines()], "",
        f".. image:: {image}",
        "   :alt: latency and requests/s against host count", "",
        README_END])
    current = readme.read_text()
    pattern = re.compile(re.escape(README_BEGIN) + ".*?"
                         + re.escape(README_END), re.S)
    if not pattern.search(current):
        raise RuntimeError(f"{readme}: no results markers to replace")
    readme.write_text(pattern.sub(lambda _: body, current))
