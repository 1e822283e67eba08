"""Round trip of ``select_destinations`` from nova 34's own client
(``SchedulerQueryClient``, RPC 4.5, Selection objects) next to our own
client (``SchedulerAPI``, RPC 1.x), against the same scheduler-server on the
same broker and fleet, in the same run::

    python benchmarks/nova_rtt.py [--hosts 1000] [--calls 300] [--rounds 3]

Nova's client runs in the nova virtualenv (``tools/nova-venv`` builds it
once) through the interop tests' driver (tests/functional/nova_driver.py),
which times each call around ``select_destinations`` itself, so process
start-up and the JSON pipe are outside the samples. The two clients take
turns in blocks of ``--calls`` calls, ``--rounds`` times, so both see the
same load on the machine; claims are released between blocks, untimed.
Prints one table: median, p90 and the ratio of nova's median to ours.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import oslo_messaging as messaging  # noqa: E402

from benchmarks import cluster as cluster_mod  # noqa: E402
from benchmarks import servers  # noqa: E402
from benchmarks.stages import FLAVOR  # noqa: E402
from scheduler import conf as sched_conf  # noqa: E402
from scheduler.rpc.client import SchedulerAPI  # noqa: E402
from tests.fixtures.venvs import venv_python  # noqa: E402

CELL = "8f1b1c52-6c2d-4f0e-9d51-3c1e8f0a7b21"
DRIVER = servers.ROOT / "tests" / "functional" / "nova_driver.py"
START_TIMEOUT = 120


class NovaDriver:
    """nova_driver.py, one JSON line each way."""

    def __init__(self, python: str, config_file: Path, log: Path):
        self._log = open(log, "w")
        self.proc = subprocess.Popen(
            [python, str(DRIVER), str(config_file)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._log, text=True)
        if json.loads(self.proc.stdout.readline()) != {"ready": True}:
            raise RuntimeError("nova driver did not start")

    def call(self, **request) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"nova client: {answer}")
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self._log.close()


def _wait_until_serving(api: SchedulerAPI, server: servers.Process) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if not server.running():
            raise RuntimeError("scheduler-server exited:\n" + server.output())
        try:
            api.ping({})
            return
        except messaging.MessagingTimeout:
            if time.monotonic() > deadline:
                raise RuntimeError("no ping answer:\n" + server.output())


def run(hosts: int, calls: int, rounds: int, workdir: Path) -> list[tuple]:
    python = venv_python("nova-venv")
    broker = servers.start_rabbitmq()
    exchange = f"nova-bench-{uuidlib.uuid4().hex[:8]}"
    fleet = cluster_mod.build(hosts, "sqlite",
                              cluster_mod.sqlite_url(workdir), workdir)
    started: list = []
    try:
        config = cluster_mod.write_config(workdir, {
            "state_path": workdir, "transport_url": broker.transport_url,
            "control_exchange": exchange, "host": "bench-nova",
            "scheduler.topic": "scheduler", "scheduler.max_attempts": 3,
            "scheduler.service_down_time": 86400,
            # No HTTP listener: runs on one machine must not share a port.
            "scheduler.http_listen": "",
            "nova.cell_uuid": CELL, "database.connection": fleet.url})
        nova_config = cluster_mod.write_config(workdir, {
            "transport_url": broker.transport_url,
            "control_exchange": exchange}, "nova.conf")
        server = servers.Process.python(
            "scheduler.cmd.server", "--config-file", str(config),
            log=workdir / "server.log")
        started.append(server)
        conf = sched_conf.load(["--config-file", str(config)])
        api = SchedulerAPI(conf, timeout=60)
        _wait_until_serving(api, server)
        nova = NovaDriver(python, nova_config, workdir / "nova-driver.log")
        started.append(nova)
        spec = {"flavor": dict(FLAVOR), "return_alternates": True}
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(rounds):
            placed = []
            for _ in range(calls):
                t0 = time.perf_counter()
                placed += [d["uuid"] for d in api.select_destinations(
                    {}, {**spec, "instance_uuids": [str(uuidlib.uuid4())]})]
                ours.append(time.perf_counter() - t0)
            api.release({}, placed)
            uuids = [str(uuidlib.uuid4()) for _ in range(calls)]
            theirs += nova.call(op="time_select", flavor=dict(FLAVOR),
                                instance_uuids=uuids)["seconds"]
            api.release({}, uuids)
        api.transport.cleanup()
    finally:
        for thing in reversed(started):
            (thing.close if isinstance(thing, NovaDriver) else thing.stop)()
        fleet.dispose()
        broker.stop()
    base = statistics.median(ours)
    return [(name, hosts, len(samples), statistics.median(samples) * 1e3,
             statistics.quantiles(samples, n=10)[-1] * 1e3,
             statistics.median(samples) / base)
            for name, samples in (
                ("our client (SchedulerAPI, RPC 1.3)", ours),
                ("nova 34 SchedulerQueryClient (RPC 4.5)", theirs))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nova-rtt-") as tmp:
        rows = run(args.hosts, args.calls, args.rounds, Path(tmp))
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"select_destinations of 1 instance with alternates, "
          f"SQLite, {args.hosts} hosts")
    print(f"{'client':42} {'hosts':>6} {'n':>5} {'median ms':>10} "
          f"{'p90 ms':>7} {'× ours':>7}")
    for name, hosts, n, median, p90, ratio in rows:
        print(f"{name:42} {hosts:>6,} {n:>5} {median:>10.2f} {p90:>7.2f} "
              f"{ratio:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
