"""Heat's boots on the plan against the same boots placed one by one, end
to end, in one run: ``python benchmarks/heat_boots.py`` (``--hosts 10000
--rounds 30``).

Heat's own code (tests/functional/heat_driver.py, in ``tools/heat-venv``)
writes one stack into a Heat database (SQLite): a ResourceGroup of
100 m1.small servers in a hard anti-affinity server group, and
gives each server Heat's hints. One scheduler-server on a SQLite fleet of
``--hosts`` nodes that heartbeats reads that database (``[heat]
database_connection``). Each round, over a real RabbitMQ, through
``SchedulerAPI.select_destinations`` (as nova's conductor sends a boot),
Heat's order, one boot after the other:

- ``heat plan``: the stack's boots with Heat's hints: the first reads the
  stack from Heat's database and places it whole; each boot takes over
  its server's planned claim. Also timed apart: the first boot, and the
  median of the others;
- ``one by one``: the same boots without Heat's hints, each placed by the
  filters and weighers alone (how nova-scheduler places Heat's servers).

Everything is released between rounds (untimed). Prints p50/p99 of each
and the ratio of the medians; never judges them.
"""
from __future__ import annotations

from pathlib import Path
import statistics
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
from scheduler.stacks import files  # noqa: E402
from tests.fixtures.heat import HeatEngine  # noqa: E402
from tests.fixtures.venvs import venv_python  # noqa: E402

FLAVORS_FILE = ROOT / "etc" / "scheduler" / "flavors.yaml"
#: The stack: SERVERS m1.small servers kept apart.
TEMPLATE = """\
heat_template_version: 2016-10-14
resources:
  apart:
    type: OS::Nova::ServerGroup
    properties: {policies: [anti-affinity]}
  nodes:
    type: OS::Heat::ResourceGroup
    properties:
      count: %d
      resource_def:
        type: OS::Nova::Server
        properties:
          flavor: m1.small
          image: cirros
          scheduler_hints: {group: {get_resource: apart}}
"""
SERVERS = 100


def heat_stack(workdir: Path, servers: int) -> tuple[str, str, list[dict]]:
    """Heat's database with the stack stored by Heat's code: its URL, the
    root stack's id and each server's boot (spec with Heat's hints), in
    Heat's order."""
    url = f"sqlite:///{workdir}/heat.sqlite"
    engine = HeatEngine(venv_python("heat-venv"),
                        workdir / "heat-driver.log")
    try:
        stored = engine.store(url, TEMPLATE % servers, stack_name="bench")
    finally:
        engine.close()
    group = stored["server_groups"][0]["physical_id"]
    flavor = files.load_flavors(FLAVORS_FILE)["m1.small"]
    boots = []
    for server in sorted(stored["servers"], key=lambda s: int(s["name"])):
        hints = {k: (group if isinstance(v, dict) else v)
                 for k, v in server["hints"].items()}
        boots.append({"flavor": flavor, "scheduler_hints": hints,
                      "instance_group": {"uuid": group,
                                         "policies": ["anti-affinity"]}})
    return url, stored["stack_id"], boots


def run(hosts: int, rounds: int, workdir: Path
        ) -> dict[str, list[float]]:
    heat_url, stack_id, boots = heat_stack(workdir, SERVERS)
    fleet = cluster.build(hosts, "sqlite", cluster.sqlite_url(workdir),
                          workdir, extra={
                              "heat.database_connection": heat_url,
                              "heat.flavors_file": str(FLAVORS_FILE)})
    broker = servers.start_rabbitmq()
    try:
        bus = types.SimpleNamespace(transport_url=broker.transport_url)
        with rpc.deployment(bus, fleet, workers=1) as (conf, _, _):
            transport = sched_rpc.get_transport(conf)
            try:
                return _rounds(SchedulerAPI(conf, transport=transport,
                                            timeout=rpc.CALL_TIMEOUT),
                               rounds, stack_id, boots)
            finally:
                transport.cleanup()
    finally:
        broker.stop()
        fleet.dispose()


def _boot_all(api: SchedulerAPI, boots: list[dict], hints: bool
              ) -> tuple[list[str], list[float]]:
    """Each boot once, in order, a new instance each; the instances and
    each boot's seconds."""
    uuids, seconds = [], []
    for boot in boots:
        spec = {**boot, "instance_uuids": [str(uuidlib.uuid4())]}
        if not hints:
            spec.pop("scheduler_hints")
        t0 = time.perf_counter()
        [placed] = api.select_destinations({}, spec)
        seconds.append(time.perf_counter() - t0)
        uuids.append(placed["uuid"])
    return uuids, seconds


def _rounds(api: SchedulerAPI, rounds: int, stack_id: str,
            boots: list[dict]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {
        "heat plan": [], "first boot": [], "boot on the plan": [],
        "one by one": []}
    for i in range(rounds + 1):          # round 0 warms up, not counted
        _, seconds = _boot_all(api, boots, hints=True)
        # The stack and every claim its instances took over.
        released = api.release_stack({}, stack_id)
        assert released == len(boots), released
        if i:
            times["heat plan"].append(sum(seconds))
            times["first boot"].append(seconds[0])
            times["boot on the plan"].append(statistics.median(seconds[1:]))

        uuids, seconds = _boot_all(api, boots, hints=False)
        api.release({}, uuids)
        if i:
            times["one by one"].append(sum(seconds))
    return times


def main(argv: list[str] | None = None) -> int:
    def in_workdir(hosts: int, rounds: int) -> dict[str, list[float]]:
        with tempfile.TemporaryDirectory(prefix="heatbench-") as tmp:
            return run(hosts, rounds, Path(tmp))

    medians = rounds_main(
        __doc__, argv, in_workdir,
        lambda args: f"{SERVERS}-server Heat stack (a ResourceGroup kept "
                     f"apart) on {args.hosts:,} hosts, {args.rounds} "
                     f"rounds, boots one after the other over RabbitMQ, "
                     f"SQLite",
        "path", {"heat plan": f"{SERVERS} boots on the plan",
                 "first boot": "  the first (reads Heat, places all)",
                 "boot on the plan": "  each other (median)",
                 "one by one": f"{SERVERS} boots placed one by one"})
    if medians is None:
        return 1
    print(f"\nthe stack's boots on the plan take "
          f"{medians['heat plan'] / medians['one by one']:.2f}x the time "
          f"of placing them one by one, at the median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
