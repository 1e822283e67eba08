"""Schedulers on several machines: ``python benchmarks/machines.py`` —
placements/s with 1, 2 and 3 scheduler machines, and what each fault of
such a deployment costs.

The test bed is the tests' (``tests/fixtures/testbed.py``): machines as
network namespaces on a bridge, each running a ``scheduler-server`` of two
workers, a three-node RabbitMQ cluster with quorum queues, and PostgreSQL
with a synchronous standby (the Galera fault: a three-node Galera cluster
behind HAProxy). Callers (``tests/fixtures/load.py``) place one m1.small
per call and release their oldest instances as they go, on a fleet of
``--nodes`` nodes of 8 places each.

- Throughput: for 1, 2 and 3 machines, ``--rounds`` windows of
  ``--seconds`` each: placements told ok per second. Prints the median
  and its ratio to one machine's.
- Faults (``tests/fixtures/faults.py``, unless ``--no-faults``): lost,
  doubled and overcommitted claims, seconds until placements succeed
  again, the slowest call, and what callers saw.

Everything runs on this one machine: three machines' schedulers share its
CPUs with the broker and database nodes, so the throughput is what one
machine's cores give, split three ways — it shows what adding a machine
costs in coordination, not what three real machines would place. Never
judges a number.
"""
from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
import statistics
import sys
import tempfile
import time

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import machine  # noqa: E402
from tests.fixtures import faults  # noqa: E402
from tests.fixtures.galera import GaleraCluster  # noqa: E402
from tests.fixtures.load import Load  # noqa: E402
from tests.fixtures.netns import Network  # noqa: E402
from tests.fixtures.postgres_standby import PostgreSQLPair  # noqa: E402
from tests.fixtures.rabbitmq_cluster import RabbitMQCluster  # noqa: E402
from tests.fixtures.testbed import TestBed  # noqa: E402
from tests.fixtures.testbed import fleet_nodes  # noqa: E402

#: Enough callers to keep three machines' six workers busy.
THREADS = 12
NODES = 24
#: m1.small places per node (tests.fixtures.testbed.fleet_nodes).
PLACES = 8


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="benchmarks/machines.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=15.0,
                   help="length of each throughput window")
    p.add_argument("--nodes", type=int, default=NODES)
    p.add_argument("--no-faults", action="store_true")
    p.add_argument("--json", type=Path, help="write the results here too")
    return p.parse_args(argv)


@contextlib.contextmanager
def started(server):
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def bed(path: Path, network: Network, rabbit: RabbitMQCluster, url: str,
        nodes: int, machines: int):
    testbed = TestBed(path, network, rabbit.transport_url, url)
    try:
        testbed.prepare(fleet_nodes(nodes))
        testbed.start(machines)
        yield testbed
    finally:
        testbed.stop()


def throughput(testbed: TestBed, nodes: int, rounds: int,
               seconds: float) -> list[float]:
    """Placements told ok per second in each of ``rounds`` windows, the
    callers holding about 60 % of the fleet's places."""
    load = Load(testbed.conf, threads=THREADS,
                live=int(nodes * PLACES * 0.6))
    load.start()
    rates = []
    try:
        load.wait_for_successes(faults.BEFORE, 0.0, faults.RECOVERY_TIMEOUT)
        for _ in range(rounds):
            start = time.monotonic()
            before = load.successes(start)
            time.sleep(seconds)
            rates.append((load.successes(start) - before) / seconds)
    finally:
        load.stop()
    return rates


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, object] = {"machine": machine.describe()}
    with tempfile.TemporaryDirectory(prefix="machinesbench-") as tmp, \
            started(Network(3)) as network, \
            started(RabbitMQCluster(address=network.address)) as rabbit:
        work = Path(tmp)
        rows = {}
        for count in (1, 2, 3):
            with started(PostgreSQLPair(address=network.address)) as pg, \
                    bed(work / f"tp{count}", network, rabbit, pg.url,
                        args.nodes, count) as testbed:
                rows[count] = throughput(testbed, args.nodes, args.rounds,
                                         args.seconds)
        results["throughput"] = rows
        faults_rows = []
        if not args.no_faults:
            scenarios = [
                ("postgresql", lambda b, db: faults.broker_node_dies(
                    b, rabbit)),
                ("postgresql", lambda b, db: faults.machine_cut_off(b)),
                ("postgresql", faults.primary_dies),
                ("galera", faults.galera_writer_dies)]
            for i, (kind, scenario) in enumerate(scenarios):
                server = (PostgreSQLPair(address=network.address)
                          if kind == "postgresql"
                          else GaleraCluster(address=network.address))
                with started(server) as db, \
                        bed(work / f"fault{i}", network, rabbit, db.url,
                            args.nodes, 3) as testbed:
                    faults_rows.append(scenario(testbed, db).row())
        results["faults"] = faults_rows

    print(machine.one_line(results["machine"]))
    print(f"placements/s, {THREADS} callers, 2 workers per machine, "
          f"{args.nodes} nodes, PostgreSQL with a synchronous standby; "
          f"median of {args.rounds} windows of {args.seconds:.0f} s\n")
    print(f"{'machines':>8}  {'placements/s':>12}  {'x 1 machine':>11}")
    one = statistics.median(rows[1])
    for count, rates in rows.items():
        median = statistics.median(rates)
        print(f"{count:>8}  {median:>12.1f}  {median / one:>11.2f}")
    if faults_rows:
        print("\n" + faults.table(faults_rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
