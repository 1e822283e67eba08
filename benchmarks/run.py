"""Scheduler benchmarks: ``python benchmarks/run.py`` (``tox -e bench``).

For each fleet size: build the fleet in each database (SQLite, PostgreSQL,
MariaDB), time the in-process stages on the first, claims on each, then
deploy scheduler-server on each fleet over a private RabbitMQ and time it
end to end next to a bare echo call on the same broker. Prints one table;
writes table.txt, results.json and latency.png to --out. Never judges a
timing: it exits non-zero only when a stage could not run.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from pathlib import Path
import shutil
import sys
import tempfile
import time
import traceback

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    # Run as a script: the checkout (benchmarks/, tests/fixtures) must be
    # importable as packages.
    sys.path.insert(0, str(ROOT))

from benchmarks import cluster  # noqa: E402
from benchmarks import machine  # noqa: E402
from benchmarks import report  # noqa: E402
from benchmarks import rpc  # noqa: E402
from benchmarks import servers  # noqa: E402
from benchmarks import stages  # noqa: E402
from benchmarks.timing import Limits  # noqa: E402
from benchmarks.timing import Row  # noqa: E402

DEFAULT_HOSTS = "1000,10000,100000"
DEFAULT_REQUESTS = 1000
DEFAULT_BUDGET = 20.0
QUICK = {"hosts": [100, 300], "requests": 10, "budget": 2.0}
DBS = ("sqlite", "postgresql", "mysql")
SERVER_DBS = ("postgresql", "mysql")
README = ROOT / "benchmarks" / "README.rst"


def _hosts(value: str) -> list[int]:
    sizes = []
    for part in value.split(","):
        part = part.strip().lower().replace("_", "")
        scale = 1
        if part.endswith("k"):
            part, scale = part[:-1], 1000
        try:
            size = int(float(part) * scale)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not a host count: {part!r}") from None
        if size < 1:
            raise argparse.ArgumentTypeError("host counts must be positive")
        sizes.append(size)
    return sorted(set(sizes))


def _dbs(value: str) -> list[str]:
    kinds = [k.strip().lower() for k in value.split(",") if k.strip()]
    bad = [k for k in kinds if k not in DBS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(
            f"--db: choose from {', '.join(DBS)} (got {value!r})")
    return list(dict.fromkeys(kinds))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--hosts", type=_hosts, default=None,
                        help=f"fleet sizes, comma separated "
                             f"(default {DEFAULT_HOSTS}; 10k works too)")
    parser.add_argument("--requests", type=int, default=None, metavar="N",
                        help=f"calls per row (default {DEFAULT_REQUESTS}); "
                             "a row stops earlier once --budget is spent")
    parser.add_argument("--budget", type=float, default=None, metavar="SEC",
                        help=f"seconds per row, untimed set-up included "
                             f"(default {DEFAULT_BUDGET:g}); every row "
                             "takes at least 3 samples")
    parser.add_argument("--db", type=_dbs, default=list(DBS),
                        help="databases for the claim and end-to-end "
                             "rows, comma separated (mysql: MariaDB); the "
                             "in-process rows use the first")
    parser.add_argument("--set", type=cluster.option_setting,
                        action="append", default=[],
                        metavar="GROUP.OPTION=VALUE",
                        help="a scheduler option for every config the run "
                             "writes, e.g. filter_scheduler.host_subset_size"
                             "=4 (repeatable; the default is the service's "
                             "defaults)")
    parser.add_argument("--workers", type=int, default=1,
                        help="[scheduler] workers of the scheduler-server "
                             "measured end to end")
    parser.add_argument("--durable-postgresql", action="store_true",
                        help="run PostgreSQL with its own commit settings "
                             "(fsync, a WAL flush per commit), as in "
                             "production, instead of the tests' fsync=off")
    parser.add_argument("--servers", type=int, default=1,
                        help="scheduler-server processes on the one topic "
                             "(each with --workers), end to end")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "benchmarks" / "results",
                        help="where table.txt, results.json and "
                             "latency.png go")
    parser.add_argument("--quick", action="store_true",
                        help=f"CI smoke run: hosts "
                             f"{','.join(map(str, QUICK['hosts']))}, "
                             f"{QUICK['requests']} calls, "
                             f"{QUICK['budget']:g} s per row (< 60 s)")
    parser.add_argument("--update-readme", action="store_true",
                        help="replace the results section of "
                             "benchmarks/README.rst with this run's table "
                             "and plot")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (databases, server "
                             "logs) and print where it is")
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else {
        "hosts": _hosts(DEFAULT_HOSTS), "requests": DEFAULT_REQUESTS,
        "budget": DEFAULT_BUDGET}
    for key in ("hosts", "requests", "budget"):
        if getattr(args, key) is None:
            setattr(args, key, preset[key])
    if args.requests < 1 or args.budget <= 0 or args.workers < 1 or \
            args.servers < 1:
        parser.error("--requests, --budget, --workers and --servers must "
                     "be positive")
    return args


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


@dataclasses.dataclass
class Run:
    """Rows so far and the stages that failed."""
    rows: list[Row] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)

    @contextlib.contextmanager
    def stage(self, name: str, hosts: int, measures: list[str]):
        """Run one stage; if it fails, log the traceback, add an empty row
        for each of its measures saying so, and carry on."""
        started = time.monotonic()
        log(f"{hosts:>7,} hosts: {name} ...")
        try:
            yield
        except Exception as e:
            traceback.print_exc()
            reason = str(e).strip().splitlines()[0][:160] if str(e).strip() \
                else ""
            message = (f"{name} at {hosts:,} hosts failed: "
                       f"{type(e).__name__}" + (f": {reason}" if reason
                                                 else ""))
            self.failures.append(message)
            done = {(r.measure, r.hosts) for r in self.rows}
            for measure in measures:
                if (measure, hosts) not in done:
                    self.rows.append(Row(measure, hosts, notes=[message]))
        else:
            log(f"{hosts:>7,} hosts: {name} done in "
                f"{time.monotonic() - started:.1f}s")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server_dbs = [kind for kind in args.db if kind in SERVER_DBS]
    missing = servers.unavailable(["rabbitmq"] + server_dbs)
    if missing:
        print("benchmarks need real servers:\n  " + "\n  ".join(missing)
              + "\n(tools/setup.sh --with-tests installs them; or leave "
              "them out of --db)", file=sys.stderr)
        return 2
    limits = Limits(args.requests, args.budget)
    meta = machine.describe()
    workdir = Path(tempfile.mkdtemp(prefix="schedbench-"))
    run = Run()
    started = time.monotonic()
    bus = None
    db_servers: dict = {}
    try:
        log(f"starting RabbitMQ and "
            f"{', '.join(server_dbs) or 'no database server'} "
            f"(work dir {workdir})")
        bus = rpc.Bus(workdir)
        for kind in server_dbs:
            db_servers[kind] = servers.start_database(
                kind, durable=args.durable_postgresql)
        for hosts in args.hosts:
            measure_size(run, hosts, args, limits, bus, db_servers, workdir)
    finally:
        if bus is not None:
            bus.close()
        for server in db_servers.values():
            server.stop()
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    meta["seconds"] = round(time.monotonic() - started, 1)
    command = "python benchmarks/run.py" + (
        " " + " ".join(argv if argv is not None else sys.argv[1:])
        if (argv if argv is not None else sys.argv[1:]) else "")
    options = {"hosts": args.hosts, "requests": args.requests,
               "budget_s": args.budget, "db": args.db,
               "workers": args.workers, "servers": args.servers,
               "durable_postgresql": args.durable_postgresql,
               "quick": args.quick,
               "set": dict(args.set),
               "command": command, "failures": run.failures}
    text, paths = report.write(run.rows, meta, options, args.out)
    print(f"{report._heading(meta)}; {meta['seconds']:.0f} s\n")
    print(text)
    print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    if args.update_readme:
        report.update_readme(README, text, meta, command, paths["plot"])
        print(f"updated {README}")
    if run.failures:
        print("\nFAILED stages:\n  " + "\n  ".join(run.failures),
              file=sys.stderr)
        return 1
    return 0


def measure_size(run: Run, hosts: int, args, limits: Limits, bus,
                 db_servers: dict, workdir: Path) -> None:
    main_kind = args.db[0]
    fleets: dict[str, cluster.Cluster] = {}
    try:
        for kind in args.db:
            with run.stage(f"build fleet in {kind}", hosts,
                           [f"claim_{kind}"] + (
                               ["refresh_nothing", "refresh_changed",
                                "refresh_full", "decide", "echo_c1",
                                "ping_c1", "select_c1", "echo_c8",
                                "select_c8"]
                               if kind == main_kind else
                               [f"ping_c1_{kind}", f"select_c1_{kind}",
                                f"select_c8_{kind}"])):
                path = workdir / f"{kind}-{hosts}"
                if kind == "sqlite":
                    path.mkdir(parents=True)
                    url = cluster.sqlite_url(path)
                else:
                    url = db_servers[kind].create_database(
                        f"bench_{hosts}")
                fleets[kind] = cluster.build(hosts, kind, url, path,
                                             dict(args.set))
                log(f"{hosts:>7,} hosts: fleet in {kind} built in "
                    f"{fleets[kind].build_seconds:.1f}s")
        main_fleet = fleets.get(main_kind)
        if main_fleet is not None:
            measures = ["refresh_nothing", "refresh_changed",
                        "refresh_full", "decide"]
            with run.stage("refresh and decide", hosts, measures):
                run.rows += stages.measure(main_fleet, limits)
        for kind, fleet in fleets.items():
            with run.stage(f"claim in {kind}", hosts, [f"claim_{kind}"]):
                run.rows.append(stages.measure_claim(fleet, limits))
            concurrent = [f"claim_c8_{kind}", f"claim_c8_batched_{kind}"]
            with run.stage(f"8 threads claiming in {kind}", hosts,
                           concurrent):
                for batched in (False, True):
                    run.rows.append(stages.measure_claims_concurrently(
                        fleet, limits, batched))
        if main_fleet is not None:
            with run.stage("end to end over RabbitMQ", hosts,
                           ["echo_c1", "ping_c1", "select_c1", "echo_c8",
                            "select_c8"]):
                run.rows += rpc.measure(bus, main_fleet, limits,
                                        args.workers, servers=args.servers)
        for kind, fleet in fleets.items():
            if kind == main_kind:
                continue
            with run.stage(f"end to end over RabbitMQ, {kind}", hosts,
                           [f"{measure}_c{concurrency}_{kind}"
                            for concurrency in (1, rpc.CONCURRENCY)
                            for measure in ("echo", "select")]
                           + [f"ping_c1_{kind}"]):
                run.rows += rpc.measure(bus, fleet, limits, args.workers,
                                        other_db=True, servers=args.servers)
    finally:
        for fleet in fleets.values():
            fleet.dispose()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
