"""Claim races: ``python benchmarks/race.py`` — what several schedulers on
one PostgreSQL cost each other.

For each fleet fill level (default 20, 60, 90 %) one fleet in its own
PostgreSQL database is filled to that level with real claims; then for each
process count (default 1, 2, 4, 6) one ``scheduler-server`` with that many
worker processes (``--servers``: that many servers of one worker each)
consumes one topic on a private RabbitMQ while client
threads place one m1.small instance per call. Per cell: placements/s,
p50/p99, lost claim races per placement, re-plans, the work thrown away on
lost races, NoValidHost answers that were only races (room was left at the
end of the row), overcommits by ``scheduler-manage allocations audit``'s
rule, and how far the spread choice lands from the best weight. The row's
claims are released afterwards, so every process count starts at the same
fill. Never judges a number; exits 1 only if a cell could not run.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
from pathlib import Path
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import uuid as uuidlib

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import oslo_messaging as messaging  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from benchmarks import cluster  # noqa: E402
from benchmarks import machine  # noqa: E402
from benchmarks import servers  # noqa: E402
from benchmarks import stages  # noqa: E402
from benchmarks.stages import FLAVOR  # noqa: E402
from benchmarks.timing import concurrently  # noqa: E402
from benchmarks.timing import Limits  # noqa: E402
from benchmarks.timing import Row  # noqa: E402
from scheduler.admin import audit  # noqa: E402
from scheduler.hosts import capacity  # noqa: E402
from scheduler.claims import consume  # noqa: E402
from scheduler.hosts.planned import Claim  # noqa: E402
from scheduler import conf as sched_conf  # noqa: E402
from scheduler import exception  # noqa: E402
from scheduler.decide import choice  # noqa: E402
from scheduler.decide import races  # noqa: E402
from scheduler.rpc import transport as rpc  # noqa: E402
from scheduler.decide import targeting  # noqa: E402
from scheduler.db import models  # noqa: E402
from scheduler.filters.base import run_filters  # noqa: E402
from scheduler.hosts.table import HostView  # noqa: E402
from scheduler.rpc.endpoint import SchedulerManager  # noqa: E402
from scheduler.rpc.client import SchedulerAPI  # noqa: E402
from scheduler.weighers.base import weigh  # noqa: E402

#: 1,000 hosts of the four fleet sizes hold about 41,000 m1.small: at 90 %
#: fill about 4,000 places are left, several times what a cell places, so
#: the 90 % cells stay at 90 % (a cell moves the fill by ~1.5 points) and
#: the whole grid fits in ~10 minutes on 2 cores; bigger fleets only make
#: the one-off fill slower, the races depend on processes and fill.
DEFAULT_HOSTS = 1000
DEFAULT_PROCESSES = "1,2,4,6"
DEFAULT_FILLS = "20,60,90"
DEFAULT_REQUESTS = 600
DEFAULT_BUDGET = 25.0
#: Client threads, the same in every cell so that cells compare: enough to
#: keep 6 processes busy (each plans one request at a time).
DEFAULT_CONCURRENCY = 12
#: Each node is filled to the level ± this (uniform), so hosts differ and
#: weights are not all tied.
FILL_JITTER = 0.10
FILL_BATCH = 200            # nodes per fill transaction
#: Placements planned (not claimed) in-process to measure the choice's
#: distance from the best host.
CHOICE_STEPS = 300
CALL_TIMEOUT = 120
START_TIMEOUT = 120
WARMUP_PER_PROCESS = 3
TABLE = "race-{label}.txt"
JSON = "race-{label}.json"
PLOT = "race.png"
README = ROOT / "benchmarks" / "README.rst"
README_BEGIN = ".. begin-race (written by benchmarks/race.py --update-readme)"
README_END = ".. end-race"

_MS = re.compile(r"(\d+(?:\.\d+)?) ms of CPU thrown away; (re-planning|"
                 r"giving up)")


def _ints(value: str) -> list[int]:
    try:
        out = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {value!r}") from None
    if not out or out[0] < 1:
        raise argparse.ArgumentTypeError("values must be positive")
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="benchmarks/race.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--hosts", type=int, default=DEFAULT_HOSTS)
    p.add_argument("--processes", type=_ints,
                   default=_ints(DEFAULT_PROCESSES),
                   help="scheduler worker processes per cell")
    p.add_argument("--fill", type=_ints, default=_ints(DEFAULT_FILLS),
                   help="fleet fill levels in percent")
    p.add_argument("--requests", type=int, default=DEFAULT_REQUESTS,
                   help="calls per cell (fewer once --budget is spent)")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET,
                   metavar="SEC", help="seconds of calls per cell")
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                   help="client threads calling select_destinations")
    p.add_argument("--servers", action="store_true",
                   help="each process its own scheduler-server (one "
                        "worker, its own host): processes that know "
                        "nothing of each other, unlike the workers of one "
                        "server")
    p.add_argument("--set", type=cluster.option_setting,
                   action="append", default=[],
                   metavar="GROUP.OPTION=VALUE",
                   help="a scheduler option for the servers (repeatable), "
                        "e.g. filter_scheduler.host_subset_size=1")
    p.add_argument("--label", default="run",
                   help="names this run's files: race-LABEL.txt/.json")
    p.add_argument("--compare", type=Path, action="append", default=[],
                   metavar="JSON", help="another run's race-*.json to draw "
                   "in the same plot (dashed)")
    p.add_argument("--out", type=Path,
                   default=ROOT / "benchmarks" / "results")
    p.add_argument("--update-readme", action="store_true",
                   help="put this run's table (and --compare's) and the "
                        "plot into benchmarks/README.rst's race section")
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory (server logs)")
    args = p.parse_args(argv)
    if min(args.hosts, args.requests, args.concurrency) < 1 or \
            args.budget <= 0 or args.fill[-1] > 100:
        p.error("--hosts, --requests, --concurrency, --budget must be "
                "positive and --fill at most 100")
    return args


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


# -- the fleet and its fill ----------------------------------------------


def _nodes(conn: sa.Connection) -> list[sa.Row]:
    n = models.compute_nodes
    return list(conn.execute(sa.select(n).where(n.c.deleted == 0)
                             .order_by(n.c.id)))


def _ratios(conf) -> capacity.Ratios:
    return capacity.Ratios.from_conf(conf)


def _room(row: sa.Row, ratios: capacity.Ratios) -> int:
    """How many more m1.small fit this node, by the capacity rule."""
    need = {capacity.VCPU: FLAVOR["vcpus"],
            capacity.MEMORY: FLAVOR["memory_mb"],
            capacity.DISK: FLAVOR["root_gb"]}
    cols = {capacity.VCPU: ("vcpus", "vcpus_used", "cpu_allocation_ratio"),
            capacity.MEMORY: ("memory_mb", "memory_mb_used",
                              "ram_allocation_ratio"),
            capacity.DISK: ("local_gb", "local_gb_used",
                            "disk_allocation_ratio")}
    room = math.inf
    for resource, (total_c, used_c, ratio_c) in cols.items():
        total, used = getattr(row, total_c), getattr(row, used_c)
        if resource.zero_unjudged and total == 0:
            continue
        if need[resource] > total:
            return 0
        lim = capacity.limit(total, capacity.ratio(getattr(row, ratio_c),
                                                   ratios.of(resource)))
        room = min(room, max(0, math.floor((lim - used) / need[resource])))
    return int(room)


def fill_level(engine: sa.Engine, ratios: capacity.Ratios
               ) -> tuple[float, int]:
    """(share of the fleet's m1.small places taken, places left)."""
    with engine.connect() as conn:
        rows = _nodes(conn)
        held = dict(conn.execute(
            sa.select(models.allocations.c.compute_node_id,
                      sa.func.count())
            .group_by(models.allocations.c.compute_node_id)).all())
    left = sum(_room(r, ratios) for r in rows)
    taken = sum(held.values())
    return (taken / (taken + left) if taken + left else 1.0), left


def fill(engine: sa.Engine, ratios: capacity.Ratios, level: float,
         seed: int = 0) -> int:
    """Claim m1.small instances (permanent, real claims) until each node
    holds ``level`` ± FILL_JITTER of what it can take. :returns: how many
    were claimed."""
    rng = random.Random(seed)
    with engine.connect() as conn:
        rows = _nodes(conn)
    placed = 0
    for start in range(0, len(rows), FILL_BATCH):
        batch = []
        for row in rows[start:start + FILL_BATCH]:
            share = min(1.0, max(0.0, level + rng.uniform(-FILL_JITTER,
                                                          FILL_JITTER)))
            count = round(share * _room(row, ratios))
            batch += [Claim(
                consumer_uuid=str(uuidlib.uuid4()), node_id=row.id,
                host=row.host, generation=row.generation,
                vcpus=FLAVOR["vcpus"], memory_mb=FLAVOR["memory_mb"],
                disk_gb=FLAVOR["root_gb"], project_id="race-fill")
                for _ in range(count)]
        if batch:
            consume.claim(engine, batch, default_ratios=ratios)
            placed += len(batch)
    return placed


# -- one cell ---------------------------------------------------------------


@dataclasses.dataclass
class Cell:
    fill: int                    # percent the fleet was filled to
    processes: int
    servers: bool = False        # one server per process, not workers
    fill_before: float = 0.0     # measured share taken before the row
    fill_after: float = 0.0
    calls: int = 0
    placements: int = 0
    wall_s: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    lost: int = 0                # lost claim races (server log lines)
    replans: int = 0
    given_up: int = 0            # NoValidHost after the last lost race
    wasted_ms: float = 0.0
    refused: int = 0             # NoValidHost answers
    refused_with_room: int = 0   # ... while the fleet still had room
    timeouts: int = 0
    overcommits: int = 0         # audit: allocations over capacity
    mismatches: int = 0          # audit: usage != sum of allocations
    subset: int = 1              # host_subset_size
    choice: str = ""             # host_subset_choice
    weight_gap: float | None = None   # mean best - chosen, of the spread
    error: str = ""

    @property
    def per_second(self) -> float | None:
        return self.placements / self.wall_s if self.wall_s else None

    @property
    def conflicts(self) -> float | None:
        return self.lost / self.placements if self.placements else None


def _config(path: Path, bus_url: str, url: str, workers: int,
            extra: dict[str, str]) -> Path:
    return cluster.write_config(path, {
        "state_path": path, "transport_url": bus_url,
        "host": "race-sched",
        "scheduler.topic": f"race-{uuidlib.uuid4().hex[:8]}",
        "scheduler.workers": workers, "scheduler.max_attempts": 1,
        # No HTTP listener: servers of one cell must not share a port.
        "scheduler.http_listen": "",
        # No heartbeating fleet: nothing but the schedulers writes to the
        # nodes, so every lost race is one scheduler against another.
        "scheduler.service_down_time": 86400,
        # Servers of a cell find each other within a second of starting,
        # not up to 10 s into the cell (the topic is the cell's own).
        "report_interval": 1,
        "database.connection": url, **extra})


def _wait_for_workers(conf, server: servers.Process, workers: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while server.log.read_text(errors="replace").count(
            "Scheduler worker consuming topic") < workers:
        if not server.running():
            raise RuntimeError("scheduler-server exited:\n"
                               + server.output())
        if time.monotonic() > deadline:
            raise RuntimeError("scheduler-server workers did not start:\n"
                               + server.output())
        time.sleep(0.1)
    probe = SchedulerAPI(conf, timeout=5)
    try:
        probe.ping({})
    finally:
        probe.transport.cleanup()


def choice_cost(conf, engine: sa.Engine, steps: int = CHOICE_STEPS,
                share: choice.Share = choice.ALONE) -> float | None:
    """How far the configured choice lands from the best host: ``steps``
    m1.small placed one after the other in this process on the fleet as
    it is (planned, each one's usage counted for the next, never claimed),
    each time the best weight minus the chosen host's weight, as a share of
    the spread between the best and the worst host that fit; the mean.
    0 means always the best (host_subset_size 1). ``share``: the
    planning worker's, which the default host_subset_size depends on."""
    manager = SchedulerManager(conf, engine, share)
    driver = manager.driver
    one = stages.spec(FLAVOR)
    gaps = []
    with driver.cycle() as table:
        view = HostView(table)
        for _ in range(steps):
            candidates, _, _ = targeting.apply(one, view,
                                               table.all_positions())
            passed, _ = run_filters(driver.filters, view, candidates, one)
            weighing = weigh(driver.weighers, view, passed, one)
            [chosen] = driver.plan_on(view, one, keep_usage=True)
            total = weighing.total
            spread = float(total.max() - total.min())
            at = int(np.flatnonzero(passed == table.positions[
                chosen.host.node_id])[0])
            gaps.append(float(total.max() - total[at]) / spread
                        if spread else 0.0)
    return float(np.mean(gaps)) if gaps else None


def run_cell(cell: Cell, workdir: Path, bus_url: str, url: str,
             engine: sa.Engine, conf, args) -> None:
    path = workdir / f"fill{cell.fill}-p{cell.processes}"
    path.mkdir(parents=True)
    extra = dict(args.set)
    per_server = 1 if cell.servers else cell.processes
    config = _config(path, bus_url, url, per_server, extra)
    sconf = sched_conf.load(["--config-file", str(config)])
    ratios = _ratios(sconf)
    # One of the cell's processes (every one is a share of its own).
    share = choice.Share(0, cell.processes)
    cell.subset = choice.subset_size(
        sconf.filter_scheduler.host_subset_size, share)
    cell.choice = sconf.filter_scheduler.host_subset_choice
    cell.weight_gap = choice_cost(sconf, engine, share=share)
    cell.fill_before, _ = fill_level(engine, ratios)
    started = [servers.Process.python(
        "scheduler.cmd.server", "--config-file", str(config),
        log=path / f"server-{i}.log",
        env={"OS_DEFAULT__HOST": f"race-sched-{i}"})
        for i in range(cell.processes // per_server)]
    placed: list[str] = []
    refusals: list[str] = []
    lock = threading.Lock()
    offsets = [0] * len(started)
    try:
        for server in started:
            _wait_for_workers(sconf, server, per_server)
        servers.wait_for_peers(started, START_TIMEOUT)
        transport = rpc.get_transport(sconf)
        api = SchedulerAPI(sconf, transport=transport, timeout=CALL_TIMEOUT)
        spec = {"flavor": dict(FLAVOR), "num_instances": 1}
        try:
            for _ in range(WARMUP_PER_PROCESS * cell.processes):
                placed += [d["uuid"] for d in
                           api.select_destinations({}, spec)]
            _release(api, placed)
            # Only the row's races count: remember where the logs are now.
            offsets = [len(server.log.read_bytes()) for server in started]

            def select() -> None:
                try:
                    dests = api.select_destinations({}, spec)
                except exception.NoValidHost as e:
                    with lock:
                        refusals.append(str(e))
                    raise
                with lock:
                    placed.extend(d["uuid"] for d in dests)

            row = Row("race", args.hosts)
            concurrently(row, select, Limits(args.requests, args.budget),
                         args.concurrency,
                         expected=(exception.NoValidHost,
                                   messaging.MessagingTimeout))
            cell.calls = len(row.samples) + row.errors
            cell.placements = len(row.samples)
            cell.wall_s = row.wall or 0.0
            cell.refused = len(refusals)
            cell.timeouts = row.errors - len(refusals)
            if row.samples:
                ms = np.array(row.samples) * 1000.0
                cell.p50_ms, cell.p99_ms = (float(v) for v in
                                            np.percentile(ms, [50, 99]))
            # Afterwards, before giving the row's claims back: the books.
            cell.fill_after, left = fill_level(engine, ratios)
            # The fleet only fills during a row: room left at its end was
            # there when any of its calls was refused.
            cell.refused_with_room = cell.refused if left > 0 else 0
            problems = audit.audit_allocations(
                engine, ratios, sconf.filter_scheduler.enabled_filters)
            cell.overcommits = sum(p["problem"] == "over capacity"
                                   for p in problems)
            cell.mismatches = sum(p["problem"] == "usage mismatch"
                                  for p in problems)
            _release(api, placed)
        finally:
            transport.cleanup()
    finally:
        for server in started:
            server.stop()
    for server, offset in zip(started, offsets):
        _count_races(cell, server.log.read_bytes()[offset:].decode(
            errors="replace"))


def _release(api: SchedulerAPI, placed: list[str]) -> None:
    while placed:
        batch, placed[:] = placed[:500], placed[500:]
        api.release({}, batch)


def _count_races(cell: Cell, text: str) -> None:
    """Lost races from the servers' log lines (scheduler.decide.races)."""
    for line in text.splitlines():
        if races.LINE not in line:
            continue
        m = _MS.search(line)
        if not m:
            continue
        cell.lost += 1
        cell.wasted_ms += float(m.group(1))
        if m.group(2) == "re-planning":
            cell.replans += 1
        else:
            cell.given_up += 1


# -- the report ----------------------------------------------------------


HEADER = ("fill", "procs", "choice", "fill now", "placed", "place/s", "p50 ms",
          "p99 ms", "lost/placed", "re-plans", "wasted CPU ms",
          "NoValidHost (races)", "overcommits", "weight gap")


def _f(value, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _processes(c: Cell) -> str:
    return f"{c.processes} srv" if c.servers else str(c.processes)


def table(cells: list[Cell]) -> str:
    lines = []
    for c in cells:
        if c.error:
            lines.append((f"{c.fill}%", _processes(c), "", "", "", "", "",
                          "", "", "", "", "", "", f"FAILED: {c.error}"))
            continue
        lines.append((
            f"{c.fill}%", _processes(c), f"{c.choice} {c.subset}",
            f"{c.fill_before:.0%}→{c.fill_after:.0%}",
            str(c.placements), _f(c.per_second, ".0f"), _f(c.p50_ms, ".1f"),
            _f(c.p99_ms, ".0f"),
            _f(None if c.conflicts is None else c.conflicts * 100, ".2f")
            + "%", str(c.replans), f"{c.wasted_ms:,.0f}",
            f"{c.refused} ({c.refused_with_room})",
            str(c.overcommits) + (f" +{c.mismatches} mismatched"
                                  if c.mismatches else ""),
            _f(None if c.weight_gap is None else c.weight_gap * 100, ".1f")
            + "%"))
    widths = [max(len(r[i]) for r in [HEADER, *lines])
              for i in range(len(HEADER))]

    def fmt(cells_) -> str:
        return "  ".join(v.rjust(w) for v, w in zip(cells_, widths)).rstrip()

    out = [fmt(HEADER), fmt(["-" * w for w in widths])]
    previous = None
    for c, line in zip(cells, lines):
        if previous is not None and c.fill != previous:
            out.append("")
        out.append(fmt(line))
        previous = c.fill
    return "\n".join(out)


def plot(runs: list[dict], path: Path) -> None:
    """Lost races per placement and placements/s against processes, one
    line per fill level; the first run solid, compared runs dashed, then
    dotted."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, (ax_c, ax_t) = plt.subplots(1, 2, figsize=(13, 5.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for r, run in enumerate(runs):
        style = ("-", "--", ":")[min(r, 2)]
        fills = sorted({c["fill"] for c in run["cells"]})
        for i, level in enumerate(fills):
            cells = [c for c in run["cells"]
                     if c["fill"] == level and not c["error"]]
            xs = [c["processes"] for c in cells]
            label = f"{run['label']}, {level}% full"
            ax_c.plot(xs, [100 * c["lost"] / c["placements"]
                           if c["placements"] else float("nan")
                           for c in cells], style, marker="o",
                      color=colors[i % len(colors)], label=label)
            ax_t.plot(xs, [c["placements"] / c["wall_s"] if c["wall_s"]
                           else float("nan") for c in cells], style,
                      marker="s", color=colors[i % len(colors)],
                      label=label)
    ax_c.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax_c.set_yscale("symlog", linthresh=1.0)
    ax_c.set_ylim(bottom=0)
    ax_c.set_ylabel("lost claim races per placement, %")
    ax_c.set_title("claim conflicts (target: < 1% up to 4 processes)")
    ax_t.set_ylabel("placements/s")
    ax_t.set_title("throughput")
    for ax in (ax_c, ax_t):
        ax.set_xlabel("scheduler processes on one PostgreSQL")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    meta = runs[0]["meta"]
    fig.suptitle(f"claim races, {runs[0]['options']['hosts']:,} hosts — "
                 f"{meta['date']}\n{machine.one_line(meta)}; commit "
                 f"{meta['commit']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def update_readme(runs: list[dict], plot_path: Path) -> None:
    parts = [README_BEGIN, ""]
    for run in runs:
        parts += [f"``{run['label']}``: {run['meta']['date']}, commit "
                  f"{run['meta']['commit']}, "
                  f"{run['meta']['seconds']:.0f} s, with "
                  f"``{run['options']['command']}``::", ""]
        parts += [f"    {line}".rstrip() for line in run["table"]
                  .splitlines()]
        parts.append("")
    parts += [f".. image:: {os.path.relpath(plot_path, README.parent)}",
              "   :alt: lost claim races per placement and placements/s "
              "against scheduler processes", "", README_END]
    text = README.read_text()
    pattern = re.compile(re.escape(README_BEGIN) + ".*?"
                         + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise RuntimeError(f"{README}: no race markers to replace")
    README.write_text(pattern.sub(lambda _: "\n".join(parts), text))


# -- main ----------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = servers.unavailable(["rabbitmq", "postgresql"])
    if missing:
        print("the race benchmark needs real servers:\n  "
              + "\n  ".join(missing), file=sys.stderr)
        return 2
    meta = machine.describe()
    workdir = Path(tempfile.mkdtemp(prefix="schedrace-"))
    started = time.monotonic()
    cells: list[Cell] = []
    broker = database = None
    try:
        log(f"starting RabbitMQ and PostgreSQL (work dir {workdir})")
        broker = servers.start_rabbitmq()
        database = servers.start_database("postgresql")
        for level in args.fill:
            url = database.create_database(f"race_{level}")
            fleet = cluster.build(args.hosts, "postgresql", url,
                                  workdir / f"fleet{level}",
                                  {**dict(args.set),
                                   "scheduler.service_down_time": 86400})
            try:
                ratios = _ratios(fleet.conf)
                t0 = time.monotonic()
                count = fill(fleet.engine, ratios, level / 100.0)
                share, left = fill_level(fleet.engine, ratios)
                log(f"fleet of {args.hosts:,} filled to {share:.1%} "
                    f"({count:,} instances, {left:,} places left) in "
                    f"{time.monotonic() - t0:.1f}s")
                for processes in args.processes:
                    cell = Cell(level, processes, args.servers)
                    log(f"{level}% full, {processes} process(es) ...")
                    try:
                        run_cell(cell, workdir, broker.transport_url, url,
                                 fleet.engine, fleet.conf, args)
                    except Exception as e:
                        traceback.print_exc()
                        cell.error = (f"{type(e).__name__}: "
                                      f"{str(e).strip()[:160]}")
                    cells.append(cell)
                    log(f"{level}% full, {processes} process(es): "
                        f"{cell.placements} placed, {cell.lost} lost "
                        f"races, {cell.refused} refused")
            finally:
                fleet.dispose()
    finally:
        if broker is not None:
            broker.stop()
        if database is not None:
            database.stop()
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    meta["seconds"] = round(time.monotonic() - started, 1)
    argv_ = argv if argv is not None else sys.argv[1:]
    command = "python benchmarks/race.py" + (
        " " + " ".join(argv_) if argv_ else "")
    text = table(cells)
    heading = (f"{meta['date']} on {machine.one_line(meta)}; commit "
               f"{meta['commit']}; {args.hosts:,} hosts, "
               f"{args.concurrency} client threads")
    run = {"label": args.label, "meta": meta, "table": text,
           "options": {"hosts": args.hosts, "processes": args.processes,
                       "servers": args.servers,
                       "fill": args.fill, "requests": args.requests,
                       "budget_s": args.budget,
                       "concurrency": args.concurrency,
                       "set": dict(args.set), "command": command},
           "cells": [{**dataclasses.asdict(c),
                      "per_second": c.per_second,
                      "conflicts": c.conflicts} for c in cells]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / TABLE.format(label=args.label)).write_text(
        heading + "\n\n" + text + "\n")
    (args.out / JSON.format(label=args.label)).write_text(
        json.dumps(run, indent=1))
    runs = [run] + [json.loads(p.read_text()) for p in args.compare]
    plot(runs, args.out / PLOT)
    print(f"{heading}; {meta['seconds']:.0f} s\n\n{text}\n\n"
          "lost/placed: claims lost to another writer per placement; "
          "NoValidHost (races): refusals (of which while room was left); "
          "weight gap: mean best - chosen weight over "
          f"{CHOICE_STEPS} placements planned in one process, share of the "
          "best-worst spread")
    if args.update_readme:
        # The compared runs (a "before") first, this one last.
        update_readme(runs[1:] + runs[:1], args.out / PLOT)
        print(f"updated {README}")
    return 1 if any(c.error for c in cells) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
