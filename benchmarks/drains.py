"""plan_drain, its apply, and capacity, end to end, in one run:
``python benchmarks/drains.py`` (``--hosts 10000 --rounds 30``).

The fleet (SQLite, heartbeating) is filled to 80 % of every node's limit
(total x ratio) in vCPUs, RAM and disk, as compute agents would report it;
one host, made large and empty, then gets 40 instances through the server
(mixed m1.small/medium/large; two of them in anti-affinity groups of 8
whose other members are placed elsewhere first). Each round
times, over a real RabbitMQ against one scheduler-server:

- ``plan``: ``plan_drain`` of that host, a dry run;
- ``apply``: ``plan_drain(apply=True)``: all 40 moves claimed in one
  transaction and the host disabled (then ``cancel_drain``, untimed, gives
  them back, so every round starts from the same fleet);
- ``capacity``: how many more m1.medium fit, in total, per zone and per
  aggregate.

Prints p50/p99 of each; never judges them.
"""
from __future__ import annotations

from pathlib import Path
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
from benchmarks.rounds import main as rounds_main  # noqa: E402
from benchmarks import rpc  # noqa: E402
from benchmarks import servers  # noqa: E402
from benchmarks.stacks import FLAVORS  # noqa: E402
from scheduler.rpc import transport as sched_rpc  # noqa: E402
from scheduler.rpc.client import SchedulerAPI  # noqa: E402

INSTANCES = 40
GROUP_SIZE = 8
FILL = 0.8


def fill(engine: sa.Engine) -> str:
    """Fill every node to :data:`FILL` of its limit; make the first node
    large and empty: the host to drain (its name)."""
    with engine.begin() as conn:
        conn.execute(sa.text(
            "UPDATE compute_nodes SET "
            "vcpus_used = CAST(vcpus * :f * COALESCE(NULLIF("
            "cpu_allocation_ratio, 0), 16.0) AS INTEGER), "
            "memory_mb_used = CAST(memory_mb * :f * COALESCE(NULLIF("
            "ram_allocation_ratio, 0), 1.5) AS INTEGER), "
            "local_gb_used = CAST(local_gb * :f * COALESCE(NULLIF("
            "disk_allocation_ratio, 0), 1.0) AS INTEGER), "
            "generation = generation + 1"), {"f": FILL})
        first = conn.execute(sa.text(
            "SELECT id, host FROM compute_nodes ORDER BY id LIMIT 1")).one()
        conn.execute(sa.text(
            "UPDATE compute_nodes SET vcpus = 512, memory_mb = 1048576, "
            "local_gb = 20000, vcpus_used = 0, memory_mb_used = 0, "
            "local_gb_used = 0 WHERE id = :id"), {"id": first.id})
    return first.host


def populate(api: SchedulerAPI, host: str) -> None:
    """The drained host's 40 instances, claimed and confirmed; one member
    of each group among them, the group's others on other hosts (placed
    by the scheduler: one per host)."""
    groups = [{"uuid": str(uuidlib.uuid4()), "policies": ["anti-affinity"]}
              for _ in range(2)]
    tiers = list(FLAVORS.values())
    uuids = []
    for group in groups:
        uuids += [d["uuid"] for d in api.select_destinations({}, {
            "flavor": FLAVORS["web"], "num_instances": GROUP_SIZE - 1,
            "instance_group": group, "ignore_hosts": [host]})]
    for i in range(INSTANCES):
        spec = {"flavor": tiers[i % len(tiers)], "force_hosts": [host]}
        if i < len(groups):
            spec["instance_group"] = groups[i]
        uuids += [d["uuid"] for d in api.select_destinations({}, spec)]
    api.confirm({}, uuids)


def run(hosts: int, rounds: int, workdir: Path) -> dict[str, list[float]]:
    fleet = cluster.build(hosts, "sqlite", cluster.sqlite_url(workdir),
                          workdir)
    host = fill(fleet.engine)
    broker = servers.start_rabbitmq()
    try:
        bus = types.SimpleNamespace(transport_url=broker.transport_url)
        with rpc.deployment(bus, fleet, workers=1) as (conf, _, _):
            transport = sched_rpc.get_transport(conf)
            try:
                api = SchedulerAPI(conf, transport=transport,
                                   timeout=rpc.CALL_TIMEOUT)
                populate(api, host)
                return _rounds(api, host, rounds)
            finally:
                transport.cleanup()
    finally:
        broker.stop()
        fleet.dispose()


def _rounds(api: SchedulerAPI, host: str,
            rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"plan": [], "apply": [],
                                     "capacity": []}
    medium = {"flavor": FLAVORS["app"], "num_instances": 1}
    for i in range(rounds + 1):          # round 0 warms up, not counted
        t0 = time.perf_counter()
        planned = api.plan_drain({}, host)
        t1 = time.perf_counter()
        applied = api.plan_drain({}, host, apply=True)
        t2 = time.perf_counter()
        assert len(planned["moves"]) == len(applied["moves"]) == INSTANCES
        assert api.cancel_drain({}, host) == INSTANCES
        t3 = time.perf_counter()
        api.capacity({}, medium)
        t4 = time.perf_counter()
        if i:
            times["plan"].append(t1 - t0)
            times["apply"].append(t2 - t1)
            times["capacity"].append(t4 - t3)
    return times


def main(argv: list[str] | None = None) -> int:
    def in_workdir(hosts: int, rounds: int) -> dict[str, list[float]]:
        with tempfile.TemporaryDirectory(prefix="drainbench-") as tmp:
            return run(hosts, rounds, Path(tmp))

    medians = rounds_main(
        __doc__, argv, in_workdir,
        lambda args: f"drain of a host with {INSTANCES} instances "
                     f"(m1.small/medium/large, two anti-affinity groups of "
                     f"{GROUP_SIZE}) on {args.hosts:,} hosts at {FILL:.0%} "
                     f"fill, {args.rounds} rounds, end to end over RabbitMQ, "
                     f"SQLite",
        "call", {"plan": "plan_drain (dry run)",
                 "apply": "plan_drain --apply (40 moves claimed)",
                 "capacity": "capacity (m1.medium)"})
    return 0 if medians is not None else 1


if __name__ == "__main__":
    sys.exit(main())
