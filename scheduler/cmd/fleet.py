"""scheduler-fleet: register N simulated compute nodes and heartbeat them
until stopped (or once, with --once)."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from scheduler.service import database
from scheduler.cmd import parsing
from scheduler import errors
from scheduler.sim import fleet
from scheduler import progress
from scheduler.db.engine import create_engine
from scheduler.db import wrapped


def build_parser() -> argparse.ArgumentParser:
    """scheduler-fleet's command line (also the CLI reference's source)."""
    parser = argparse.ArgumentParser(
        prog="scheduler-fleet",
        description="Simulated compute nodes for demos, tests and "
                    "benchmarks.")
    parsing.add_config_args(parser)
    parser.add_argument("--nodes", type=int, required=True,
                        help="number of compute nodes (compute-00001...)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the node sizes and ratios")
    parser.add_argument("--heartbeat-interval", type=float, default=10.0,
                        metavar="SEC", help="seconds between heartbeats")
    parser.add_argument("--once", action="store_true",
                        help="register and heartbeat once, then exit")
    progress.add_argument(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.nodes < 0:
        parser.error("--nodes must not be negative")
    if args.heartbeat_interval <= 0:
        parser.error("--heartbeat-interval must be positive")
    loaded: list = []

    def body() -> int:
        conf = parsing.conf_from_args(args)
        loaded.append(conf)
        # No logging set up here: Python's last resort would print oslo.db's
        # "exception wrapped" WARNING, traceback and all, beside our line.
        wrapped.install(drop=True)
        database.check_database(conf, config_given=bool(args.config_file
                                                        or args.config_dir))
        engine = create_engine(conf)
        try:
            database.require_schema(conf, engine)
            return run(engine, args)
        finally:
            engine.dispose()

    return errors.run(body, conf=lambda: loaded[0] if loaded else None)


def run(engine, args: argparse.Namespace) -> int:
    """Register, heartbeat once, then (unless ``--once``) until SIGTERM."""
    nodes = fleet.make_nodes(args.nodes, args.seed)
    hosts = [n.host for n in nodes]
    started = time.monotonic()
    show = progress.wanted(args.progress)
    new = fleet.register(engine, nodes, progress=lambda total: (
        progress.reporter("fleet: registering new nodes", total, show)))
    fleet.heartbeat(engine, hosts)
    print(f"fleet: {len(nodes)} nodes ({new} new) registered in "
          f"{time.monotonic() - started:.2f}s", flush=True)
    if args.once:
        return 0
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(args.heartbeat_interval):
        try:
            fleet.heartbeat(engine, hosts)
        except Exception as e:  # the database may be restarting
            print(f"fleet: heartbeat failed: {e}", file=sys.stderr,
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
