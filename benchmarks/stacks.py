"""select_stack against the sequential path, end to end, in one run:
``python benchmarks/stacks.py`` (``--hosts 10000 --rounds 30``).

The stack is a 100-server, three-tier Heat stack: 20 database servers
(m1.large), 30 application servers (m1.medium) and 50 web servers
(m1.small), one resource each, every tier a hard anti-affinity server group
and each tier depending on the one below. Each round times, over a real
RabbitMQ against one scheduler-server on a SQLite fleet that heartbeats:

- ``select_stack``: the whole stack in one call (plan + one transaction);
- ``sequential``: the same 100 servers as 100 ``select_destinations``
  calls one after the other (how Heat boots a stack), timed as a whole.

Everything is released between rounds (untimed), so every round starts
from the same empty fleet. Prints p50/p99 of each and the ratio of the
medians; never judges them.
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

from benchmarks import cluster  # noqa: E402
from benchmarks.rounds import main as rounds_main  # noqa: E402
from benchmarks import rpc  # noqa: E402
from benchmarks import servers  # noqa: E402
from scheduler.rpc import transport as sched_rpc  # noqa: E402
from scheduler.rpc.client import SchedulerAPI  # noqa: E402

#: nova's m1 flavors the tiers use.
FLAVORS = {
    "db": {"name": "m1.large", "memory_mb": 8192, "vcpus": 4,
           "root_gb": 80},
    "app": {"name": "m1.medium", "memory_mb": 4096, "vcpus": 2,
            "root_gb": 40},
    "web": {"name": "m1.small", "memory_mb": 2048, "vcpus": 1,
            "root_gb": 20},
}
TIERS = (("db", 20), ("app", 30), ("web", 50))
BELOW = {"app": "db", "web": "app"}


def make_stack() -> tuple[dict, list[dict]]:
    """A fresh stack (new ids and groups) and the same servers as the
    single requests Heat would send, in creation order."""
    groups = {tier: str(uuidlib.uuid4()) for tier, _ in TIERS}
    resources, singles = {}, []
    for tier, count in TIERS:
        for i in range(count):
            spec = {"flavor": FLAVORS[tier], "instance_group": {
                "uuid": groups[tier], "policies": ["anti-affinity"]}}
            below = BELOW.get(tier)
            depends = [f"{below}{j}" for j in range(dict(TIERS)[below])] \
                if below else []
            resources[f"{tier}{i}"] = {"spec": spec, "depends_on": depends}
            singles.append(spec)
    return {"stack_id": str(uuidlib.uuid4()), "resources": resources}, \
        singles


def run(hosts: int, rounds: int, workdir: Path) -> dict[str, list[float]]:
    fleet = cluster.build(hosts, "sqlite", cluster.sqlite_url(workdir),
                          workdir)
    broker = servers.start_rabbitmq()
    try:
        bus = types.SimpleNamespace(transport_url=broker.transport_url)
        with rpc.deployment(bus, fleet, workers=1) as (conf, _, _):
            transport = sched_rpc.get_transport(conf)
            try:
                return _rounds(SchedulerAPI(conf, transport=transport,
                                            timeout=rpc.CALL_TIMEOUT),
                               rounds)
            finally:
                transport.cleanup()
    finally:
        broker.stop()
        fleet.dispose()


def _rounds(api: SchedulerAPI, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"select_stack": [], "sequential": []}
    for i in range(rounds + 1):          # round 0 warms up, not counted
        stack, singles = make_stack()
        t0 = time.perf_counter()
        result = api.select_stack({}, stack)
        elapsed = time.perf_counter() - t0
        placed = sum(len(d) for d in result["resources"].values())
        assert placed == 100, placed
        api.release_stack({}, stack["stack_id"])
        if i:
            times["select_stack"].append(elapsed)

        uuids = []
        t0 = time.perf_counter()
        for spec in singles:
            uuids += [d["uuid"] for d in api.select_destinations({}, spec)]
        elapsed = time.perf_counter() - t0
        api.release({}, uuids)
        if i:
            times["sequential"].append(elapsed)
    return times


def main(argv: list[str] | None = None) -> int:
    def in_workdir(hosts: int, rounds: int) -> dict[str, list[float]]:
        with tempfile.TemporaryDirectory(prefix="stackbench-") as tmp:
            return run(hosts, rounds, Path(tmp))

    medians = rounds_main(
        __doc__, argv, in_workdir,
        lambda args: f"100-server stack (3 tiers, anti-affinity per tier) "
                     f"on {args.hosts:,} hosts, {args.rounds} rounds, end "
                     f"to end over RabbitMQ, SQLite",
        "path", {"select_stack": "select_stack (one call)",
                 "sequential": "100 x select_destinations"})
    if medians is None:
        return 1
    print(f"\nselect_stack is "
          f"{medians['sequential'] / medians['select_stack']:.1f}x "
          f"faster at the median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
