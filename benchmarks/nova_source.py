"""Nova's databases as the host source beside our own schema, end to end,
in one run: ``python benchmarks/nova_source.py`` (``--hosts 10000``;
``--quick`` is a smoke run of under a minute).

Both fleets have the same ``--hosts`` nodes (``scheduler.sim.fleet``,
seed 0: the same sizes, ratios and three zones), in one PostgreSQL:

- own schema: our ``services`` / ``compute_nodes`` tables, heartbeated by
  ``scheduler-fleet`` every 10 s, as ``run.py``'s end-to-end rows;
- nova source: nova 34's own API database and two cells, half the nodes
  each, their schemas built by ``nova-manage`` (``NovaTemplates`` of
  tests/fixtures/nova_cloud.py) and their rows INSERTed as nova's computes
  and ``discover_hosts`` leave them (10,000 nova objects one by one would
  take minutes); heartbeated by ``benchmarks/nova_heartbeat.py``, every
  service every 10 s, spread evenly. That server runs with ``[nova]
  api_database_connection`` on a database of its own, which its sync
  fills and keeps in step.

Measured:

1. The sync cycle, in this process: :class:`NovaSource` mirroring into a
   third database of ours while the cells heartbeat; its first full read,
   then ``--cycles`` cycles one ``[nova] sync_interval`` apart, the wall
   and CPU time of each (CPU: the cycle's own thread; the databases'
   work is theirs). Also the first read the nova server itself logs, and
   its own cycles while it serves the rows (its /metrics).
2. End to end over a private RabbitMQ, one ``scheduler-server`` per fleet
   (``--workers`` each, both up throughout): ``select_destinations`` of
   one m1.small at concurrency 1 and 8 through ``SchedulerAPI``, the two
   servers taking turns (``timing.alternately``) so both live through the
   same seconds of the machine; claims released between turns.

Prints p50/p99, requests/s, the servers' CPU per call and the nova/own
ratios; never judges them.
"""
from __future__ import annotations

import argparse
from concurrent import futures
import contextlib
import dataclasses
import datetime
from pathlib import Path
import re
import shutil
import statistics
import sys
import tempfile
import time
import types
import uuid as uuidlib

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from benchmarks import cluster  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import machine  # noqa: E402
from benchmarks import rpc  # noqa: E402
from benchmarks.rounds import percentile  # noqa: E402
from benchmarks import servers  # noqa: E402
from benchmarks import service_split  # noqa: E402
from benchmarks.timing import alternately  # noqa: E402
from benchmarks.timing import Limits  # noqa: E402
from benchmarks.timing import Row  # noqa: E402
from scheduler.db import clock  # noqa: E402
from scheduler.novadb.source import NovaSource  # noqa: E402
from scheduler.rpc import transport as sched_rpc  # noqa: E402
from scheduler.rpc.client import SchedulerAPI  # noqa: E402
from scheduler.sim import fleet  # noqa: E402
from tests.fixtures.nova_cloud import CELLS  # noqa: E402
from tests.fixtures.nova_cloud import NovaTemplates  # noqa: E402
from tests.fixtures.venvs import venv_python  # noqa: E402

DEFAULTS = {"hosts": 10000, "requests": 1000, "budget": 20.0, "cycles": 20}
QUICK = {"hosts": 200, "requests": 20, "budget": 2.0, "cycles": 3}
#: Nova 34's ``nova.objects.service.SERVICE_VERSION``: what its computes
#: write in ``services.version``.
NOVA_SERVICE_VERSION = 74
#: Rows per INSERT while filling nova's tables.
BATCH = 2000
#: How long ago the computes started and last wrote their nodes: a fleet
#: up for a while, whose idle nodes nova's resource tracker does not
#: write again (it saves a node only when its usage changes). Nodes
#: written within ``novadb.source.SLACK`` would be read again by every
#: sync cycle, which is not the steady state.
STARTED_AGO = datetime.timedelta(hours=1)
SOURCES = {"own": "own schema", "nova": "nova source, 2 cells"}
#: The server's histogram of its sync cycles' seconds.
SYNC_SECONDS = "scheduler_nova_sync_seconds"
_FIRST_READ = re.compile(r"Nova's databases read in ([0-9.]+) s")


@dataclasses.dataclass
class NovaDatabases:
    """A nova deployment's API database and its cells' (name -> URL)."""
    api_url: str
    cells: dict[str, str]


def build_nova(python: str, server, work_dir: Path,
               nodes: list[fleet.Node]) -> NovaDatabases:
    """Nova's API database, cell0 and two cells built by nova-manage
    (``server``: the run's PostgreSQL), then ``nodes`` split between the
    two cells in order, as :func:`fill` writes them. The templates are
    this run's own, so they are filled in place rather than copied."""
    work_dir.mkdir(parents=True, exist_ok=True)
    templates = NovaTemplates("postgresql", python, server, work_dir)
    databases = NovaDatabases(
        server.url_for(templates.template_name("api")),
        {name: server.url_for(templates.template_name(name))
         for name in CELLS})
    half = len(nodes) // len(CELLS)
    parts = {name: nodes[i * half:(i + 1) * half if i < len(CELLS) - 1
                         else None] for i, name in enumerate(CELLS)}
    fill(databases, parts)
    return databases


def fill(databases: NovaDatabases, parts: dict[str, list[fleet.Node]]
         ) -> None:
    """Each cell's ``nova-compute`` services and their compute nodes, as
    they stand after a compute's first report and ``nova-manage cell_v2
    discover_hosts`` (host mapped, node ``mapped``, written
    :data:`STARTED_AGO`, ``last_seen_up`` now);
    one aggregate per zone with its ``availability_zone``, as the
    own-schema fleet has. Then ANALYZE, as autovacuum would within its
    first minute."""
    api = sa.create_engine(databases.api_url)
    try:
        tables = _reflect(api, "cell_mappings", "host_mappings",
                          "aggregates", "aggregate_hosts",
                          "aggregate_metadata")
        with api.begin() as conn:
            cell_ids = dict(conn.execute(sa.select(
                tables["cell_mappings"].c.name,
                tables["cell_mappings"].c.id)).all())
        for name, nodes in parts.items():
            _fill_cell(databases.cells[name], nodes)
            with api.begin() as conn:
                now = clock.db_time(conn)
                for batch in _batches(nodes):
                    conn.execute(tables["host_mappings"].insert(), [
                        {"cell_id": cell_ids[name], "host": n.host,
                         "created_at": now} for n in batch])
        everyone = [n for nodes in parts.values() for n in nodes]
        with api.begin() as conn:
            now = clock.db_time(conn)
            for zone in fleet.ZONES:
                agg_id = conn.execute(tables["aggregates"].insert().values(
                    uuid=str(uuidlib.uuid4()), name=zone, created_at=now)
                ).inserted_primary_key[0]
                conn.execute(tables["aggregate_metadata"].insert().values(
                    aggregate_id=agg_id, key="availability_zone",
                    value=zone, created_at=now))
                members = [n for n in everyone if n.zone == zone]
                for batch in _batches(members):
                    conn.execute(tables["aggregate_hosts"].insert(), [
                        {"aggregate_id": agg_id, "host": n.host,
                         "created_at": now} for n in batch])
        analyze(api)
    finally:
        api.dispose()


def _fill_cell(url: str, nodes: list[fleet.Node]) -> None:
    engine = sa.create_engine(url)
    try:
        tables = _reflect(engine, "services", "compute_nodes")
        services, computes = tables["services"], tables["compute_nodes"]
        for batch in _batches(nodes):
            with engine.begin() as conn:
                now = clock.db_time(conn)
                then = now - STARTED_AGO
                conn.execute(services.insert(), [
                    {"uuid": str(uuidlib.uuid4()), "host": n.host,
                     "binary": "nova-compute", "topic": "compute",
                     "report_count": 1, "disabled": False,
                     "forced_down": False, "deleted": 0,
                     "version": NOVA_SERVICE_VERSION, "created_at": then,
                     "updated_at": now, "last_seen_up": now}
                    for n in batch])
                ids = dict(conn.execute(
                    sa.select(services.c.host, services.c.id).where(
                        services.c.host.in_([n.host for n in batch]))).all())
                # The sizes, ratios and descriptions of the own-schema
                # fleet's nodes (fleet.register), so that both rows plan
                # on the same hosts; the rest as nova's compute fills it.
                conn.execute(computes.insert(), [
                    {"uuid": str(uuidlib.uuid4()), "service_id": ids[n.host],
                     "host": n.host, "hypervisor_hostname": n.host,
                     "hypervisor_type": "QEMU",
                     "hypervisor_version": 8002000, "host_ip": n.host_ip,
                     "vcpus": n.vcpus, "memory_mb": n.memory_mb,
                     "local_gb": n.local_gb, "vcpus_used": 0,
                     "memory_mb_used": 0, "local_gb_used": 0,
                     "free_ram_mb": n.memory_mb, "free_disk_gb": n.local_gb,
                     "disk_available_least": n.local_gb,
                     "running_vms": 0, "current_workload": 0,
                     "cpu_info": "{}", "stats": "{}", "metrics": "[]",
                     "cpu_allocation_ratio": n.cpu_allocation_ratio,
                     "ram_allocation_ratio": n.ram_allocation_ratio,
                     "disk_allocation_ratio": 1.0, "mapped": 1,
                     "deleted": 0, "created_at": then, "updated_at": then}
                    for n in batch])
        analyze(engine)
    finally:
        engine.dispose()


def _reflect(engine: sa.Engine, *names: str) -> dict[str, sa.Table]:
    """Nova's own tables, every column (nova-manage made them)."""
    metadata = sa.MetaData()
    metadata.reflect(engine, only=list(names))
    return {name: metadata.tables[name] for name in names}


def _batches(items: list, size: int = BATCH) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def analyze(engine: sa.Engine) -> None:
    """What autovacuum does within a minute of a bulk load: the planner's
    statistics."""
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql("ANALYZE")


def heartbeats(databases: NovaDatabases) -> rpc.Heartbeats:
    """benchmarks/nova_heartbeat.py on the cells of ``databases``, every
    service every :data:`rpc.HEARTBEAT_INTERVAL` seconds."""
    def start(config_file: Path, where: Path
              ) -> tuple[servers.Process, str]:
        return servers.Process.python(
            "benchmarks.nova_heartbeat",
            "--interval", str(rpc.HEARTBEAT_INTERVAL),
            *databases.cells.values(),
            log=where / "nova-heartbeat.log"), "heartbeating"
    return start


@contextlib.contextmanager
def heartbeating(databases: NovaDatabases, where: Path):
    """The cells heartbeating while the block runs."""
    process, ready = heartbeats(databases)(Path(), where)
    try:
        process.wait_for_output(ready, rpc.START_TIMEOUT)
        yield process
    finally:
        process.stop()


@dataclasses.dataclass
class SyncTimes:
    """Seconds of :meth:`NovaSource.sync`: the first (everything read and
    mirrored) and each cycle after it, wall and CPU."""
    first_wall: float
    first_cpu: float
    walls: list[float]
    cpus: list[float]
    #: The first read as the nova server logged it at start.
    server_first: float | None = None
    #: The server's own cycles while it served the rows: how many, and
    #: their mean seconds (``scheduler_nova_sync_seconds``).
    server_cycles: int = 0
    server_mean: float | None = None


def time_sync(conf, engine: sa.Engine, cycles: int) -> SyncTimes:
    """:class:`NovaSource` of ``conf`` mirroring into ``engine``'s database
    (empty): its first sync, then ``cycles`` more, one ``[nova]
    sync_interval`` apart, as its thread in a worker runs them."""
    source = NovaSource(conf, engine)
    try:
        source.check()
        first_wall, first_cpu = _timed(source.sync)
        walls, cpus = [], []
        for _ in range(cycles):
            time.sleep(conf.nova.sync_interval)
            wall, spent = _timed(source.sync)
            walls.append(wall)
            cpus.append(spent)
    finally:
        source.close()
    return SyncTimes(first_wall, first_cpu, walls, cpus)


def _timed(call) -> tuple[float, float]:
    """Wall and CPU (this thread's) seconds of ``call()``."""
    wall, spent = time.perf_counter(), time.thread_time()
    call()
    return time.perf_counter() - wall, time.thread_time() - spent


def server_first_read(server: servers.Process) -> float | None:
    """The seconds the server's first read of nova's databases took, from
    its log (the slowest worker's)."""
    found = _FIRST_READ.findall(server.log.read_text(errors="replace"))
    return max(map(float, found)) if found else None


def measure(deployed: dict[str, tuple], hosts: int, limits: Limits
            ) -> list[Row]:
    """``select_destinations`` on each deployment of ``deployed`` (name ->
    what :func:`rpc.deployment` yields) at concurrency 1 then 8, the
    deployments taking turns; rows keyed ``select_c<N>_<name>``, each
    with its servers' CPU and their own split of its time."""
    clients = {}
    try:
        for name, (conf, running, urls) in deployed.items():
            transport = sched_rpc.get_transport(conf)
            api = SchedulerAPI(conf, transport=transport,
                               timeout=rpc.CALL_TIMEOUT)
            clients[name] = (transport, rpc.Placer(api),
                             cpu.Meter([s.proc.pid for s in running]), urls)
        for _, placer, _, _ in clients.values():
            for _ in range(rpc.WARMUP_CALLS):
                placer.select()
            placer.release()
        rows: list[Row] = []
        for concurrency in (1, rpc.CONCURRENCY):
            measured = {name: Row(f"select_c{concurrency}_{name}", hosts)
                        for name in clients}
            turns = [rpc.turn(measured[name], placer.select, meter,
                              concurrency, placer.release)
                     for name, (_, placer, meter, _) in clients.items()]
            before = {name: service_split.scrape(urls)
                      for name, (_, _, _, urls) in clients.items()}
            alternately(turns, limits, rpc.ROUNDS)
            for name, (_, _, _, urls) in clients.items():
                measured[name].service_split = service_split.split(
                    before[name], service_split.scrape(urls))
            rows += measured.values()
        rpc.note_errors(rows)
        return rows
    finally:
        for transport, _, _, _ in clients.values():
            transport.cleanup()


def run(args: argparse.Namespace, work_dir: Path
        ) -> tuple[SyncTimes, list[Row]]:
    """Build both fleets, time the sync, deploy both servers and measure
    them; stop everything."""
    limits = Limits(args.requests, args.budget)
    nodes = fleet.make_nodes(args.hosts, cluster.SEED)
    python = venv_python("nova-venv")
    with contextlib.ExitStack() as stack:
        log("starting RabbitMQ and PostgreSQL")
        # The broker starts while nova-manage runs: seconds of each, and
        # --quick has a minute.
        pool = stack.enter_context(futures.ThreadPoolExecutor(1))
        starting = pool.submit(servers.start_rabbitmq)
        stack.callback(_stop_once_started, starting)
        database = servers.start_database("postgresql")
        stack.callback(database.stop)
        started = time.monotonic()
        nova = build_nova(python, database, work_dir / "nova", nodes)
        log(f"nova's databases built by nova-manage and filled with "
            f"{args.hosts:,} nodes in {time.monotonic() - started:.1f} s")
        broker = starting.result()
        probe = cluster.build(
            args.hosts, "postgresql", database.create_database("probe"),
            work_dir / "probe", _nova_options(nova), register=False)
        stack.callback(probe.dispose)
        with heartbeating(nova, work_dir / "probe"):
            log(f"timing the sync: its first read, then {args.cycles} "
                f"cycles")
            sync = time_sync(probe.conf, probe.engine, args.cycles)
        started = time.monotonic()
        own = cluster.build(args.hosts, "postgresql",
                            database.create_database("own"),
                            work_dir / "own")
        stack.callback(own.dispose)
        log(f"own-schema fleet built in {time.monotonic() - started:.1f} s")
        mirror = cluster.build(
            args.hosts, "postgresql", database.create_database("mirror"),
            work_dir / "mirror", _nova_options(nova), register=False)
        stack.callback(mirror.dispose)
        bus = types.SimpleNamespace(transport_url=broker.transport_url)
        log("deploying both servers")
        deployed = {
            "own": stack.enter_context(rpc.deployment(bus, own,
                                                      args.workers)),
            "nova": stack.enter_context(rpc.deployment(
                bus, mirror, args.workers, heartbeats=heartbeats(nova)))}
        sync.server_first = server_first_read(deployed["nova"][1][0])
        # The mirror was bulk-loaded by the server's first sync.
        analyze(mirror.engine)
        log("measuring select_destinations, the servers taking turns")
        urls = deployed["nova"][2]
        total, count = service_split.histogram(urls, SYNC_SECONDS)
        rows = measure(deployed, args.hosts, limits)
        after, after_count = service_split.histogram(urls, SYNC_SECONDS)
        sync.server_cycles = int(after_count - count)
        if sync.server_cycles:
            sync.server_mean = (after - total) / sync.server_cycles
        return sync, rows


def _stop_once_started(starting: futures.Future) -> None:
    """Stop the server ``starting`` started; nothing if it failed to (its
    error is raised where its result is asked for)."""
    if starting.exception() is None:
        starting.result().stop()


def _nova_options(nova: NovaDatabases) -> dict[str, str]:
    return {"nova.api_database_connection": nova.api_url}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def table(sync: SyncTimes, rows: list[Row], hosts: int) -> str:
    """The rows side by side with their nova/own ratios, and the sync's
    cost."""
    by = {row.measure: row for row in rows}
    out = [f"{'select_destinations':<32}  {'n':>5}  {'p50 ms':>7}  "
           f"{'p99 ms':>7}  {'req/s':>6}  {'cpu ms':>6}  {'refresh ms':>10}"]
    for concurrency in (1, rpc.CONCURRENCY):
        cells = {}
        for name, label in SOURCES.items():
            row = by[f"select_c{concurrency}_{name}"]
            cells[name] = _cells(row)
            out.append(f"{label + f', c{concurrency}':<32}  "
                       f"{len(row.samples):>5}  "
                       + "  ".join(_fmt(v, w) for v, w in zip(
                           cells[name], (7, 7, 6, 6, 10))))
        ratios = [n / o if n is not None and o else None
                  for n, o in zip(cells["nova"], cells["own"])]
        out.append(f"{f'nova / own, c{concurrency}':<32}  {'':>5}  "
                   + "  ".join(_fmt(v, w, ratio=True) for v, w in zip(
                       ratios, (7, 7, 6, 6, 10))))
        out.append("")
    walls = [w * 1000 for w in sync.walls]
    cpus = [c * 1000 for c in sync.cpus]
    server = ("—" if sync.server_first is None
              else f"{sync.server_first:.2f} s")
    out += [f"nova source sync, {hosts:,} nodes in {len(CELLS)} cells, "
            f"cells heartbeating:",
            f"  first read, in process: {sync.first_wall:.2f} s "
            f"({sync.first_cpu:.2f} s CPU); in the server at start: "
            f"{server}"]
    if walls:
        out.append(f"  a cycle, n={len(walls)}: median "
                   f"{statistics.median(walls):.1f} ms "
                   f"({statistics.median(cpus):.1f} ms CPU), p99 "
                   f"{percentile(walls, 0.99):.1f} ms "
                   f"({percentile(cpus, 0.99):.1f} ms CPU)")
    if sync.server_mean is not None:
        out.append(f"  in the server, beside the rows: "
                   f"{sync.server_cycles} cycles, mean "
                   f"{sync.server_mean * 1000:.1f} ms")
    notes = [f"{row.measure}: {note}" for row in rows for note in row.notes]
    return "\n".join(out + notes)


def _cells(row: Row) -> list[float | None]:
    """p50, p99 (ms), req/s (concurrent rows), CPU ms per call, and the
    mean refresh stage (ms) of ``row``."""
    samples = row.samples
    split = row.service_split or {}
    refresh = split.get("refresh")
    return [statistics.median(samples) * 1000 if samples else None,
            percentile(samples, 0.99) * 1000 if samples else None,
            row.requests_per_second if row.concurrency > 1 else None,
            row.cpu_ms_per_call,
            refresh * 1000 if refresh is not None else None]


def _fmt(value: float | None, width: int, ratio: bool = False) -> str:
    if value is None:
        return f"{'—':>{width}}"
    if ratio:
        return f"{value:>{width - 1}.2f}×"
    return f"{value:>{width}.{0 if value >= 100 else 2}f}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/nova_source.py",
        description=__doc__.split("\n\n")[0])
    for key, kind, what in (
            ("hosts", int, "nodes per fleet, half in each cell"),
            ("requests", int, "calls per row"),
            ("budget", float, "seconds per row"),
            ("cycles", int, "sync cycles timed in process")):
        parser.add_argument(f"--{key}", type=kind, default=None,
                            help=f"{what} (default {DEFAULTS[key]:g})")
    parser.add_argument("--workers", type=int, default=1,
                        help="[scheduler] workers of each server "
                             "(default 1)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK['hosts']} hosts, "
                             f"{QUICK['requests']} calls, "
                             f"{QUICK['budget']:g} s per row, "
                             f"{QUICK['cycles']} cycles (< 60 s)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (configs, logs)")
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else DEFAULTS
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if min(args.hosts - len(CELLS) + 1, args.requests, args.budget,
           args.workers) <= 0 or args.cycles < 0:
        parser.error(f"--hosts must be at least {len(CELLS)}; --requests, "
                     f"--budget and --workers positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = servers.unavailable(["rabbitmq", "postgresql"])
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    work_dir = Path(tempfile.mkdtemp(prefix="novasource-"))
    started = time.monotonic()
    try:
        sync, rows = run(args, work_dir)
    finally:
        if args.keep:
            log(f"kept {work_dir}")
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
    print(machine.one_line(machine.describe()))
    print(f"{args.hosts:,} hosts, PostgreSQL, {args.workers} worker(s) per "
          f"server, end to end over RabbitMQ, the two servers taking "
          f"turns; {time.monotonic() - started:.0f} s\n")
    print(table(sync, rows, args.hosts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
