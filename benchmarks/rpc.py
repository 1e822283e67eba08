"""End to end over a real RabbitMQ: ``select_destinations`` through
``SchedulerAPI`` to a ``scheduler-server`` subprocess (with claims) while a
``scheduler-fleet`` subprocess heartbeats every node every 10 s, and the
same calls to a bare echo server on the same broker, measured the same way
in the same seconds: the two take turns.

:class:`Bus` is the broker's side of a run (the echo server lives as long as
the broker); :func:`measure` deploys one scheduler on one fleet and takes
its five rows: echo, the scheduler's ping and select at concurrency 1
(latency), then echo and select at concurrency 8 (sustained requests per
second).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
import time
from typing import Callable
import uuid as uuidlib

import oslo_messaging as messaging

from scheduler import conf as sched_conf
from scheduler import exception
from scheduler.rpc import transport as rpc
from scheduler.rpc.client import SchedulerAPI

from benchmarks import cluster as cluster_mod
from benchmarks import cpu
from benchmarks import servers as servers_mod
from benchmarks import service_split
from benchmarks.echo import EchoClient
from benchmarks.stages import FLAVOR
from benchmarks.timing import alternately
from benchmarks.timing import concurrently
from benchmarks.timing import Limits
from benchmarks.timing import repeat
from benchmarks.timing import Row
from tests.fixtures._net import free_ports
from tests.fixtures._net import LOOPBACK

#: A call slower than this is an error, not a sample (no silent re-send:
#: the benchmark client sets [scheduler] max_attempts = 1).
CALL_TIMEOUT = 300
START_TIMEOUT = 120
#: The "sustained requests/s" rows.
CONCURRENCY = 8
HEARTBEAT_INTERVAL = 10
WARMUP_CALLS = 3
#: Turns the echo and the scheduler take at each concurrency: each turn
#: a fifth of a row's calls, long enough (200 calls by default) that
#: starting and draining 8 client threads is a small part of it.
ROUNDS = 5
#: What a call may fail with: counted in its row's notes, not a sample.
EXPECTED = (exception.NoValidHost, messaging.MessagingTimeout)


class Bus:
    """A private broker and an echo server on it, for the whole run."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.broker = servers_mod.start_rabbitmq()
        self.echo_topic = f"bench-echo-{uuidlib.uuid4().hex[:8]}"
        path = workdir / "echo"
        path.mkdir(parents=True, exist_ok=True)
        config = cluster_mod.write_config(path, {
            "transport_url": self.broker.transport_url,
            "host": "bench-echo"})
        self.echo_server = servers_mod.Process.python(
            "benchmarks.echo", "--config-file", str(config),
            "--topic", self.echo_topic, log=path / "echo.log")
        try:
            self.echo_server.wait_for_output("echo: serving", START_TIMEOUT)
        except BaseException:
            self.close()
            raise

    @property
    def transport_url(self) -> str:
        return self.broker.transport_url

    def close(self) -> None:
        try:
            self.echo_server.stop()
        finally:
            self.broker.stop()


#: What starts the process heartbeating a deployment's nodes, given the
#: client's config file and the deployment's directory: that process, and
#: the text its log shows once every node has reported.
Heartbeats = Callable[[Path, Path], tuple[servers_mod.Process, str]]


def fleet_heartbeats(fleet: cluster_mod.Cluster) -> Heartbeats:
    """``scheduler-fleet`` on ``fleet``'s own database: its nodes, every
    :data:`HEARTBEAT_INTERVAL` seconds."""
    def start(config_file: Path, where: Path
              ) -> tuple[servers_mod.Process, str]:
        return servers_mod.Process.python(
            "scheduler.cmd.fleet", "--config-file", str(config_file),
            "--nodes", str(fleet.hosts), "--seed", str(cluster_mod.SEED),
            "--heartbeat-interval", str(HEARTBEAT_INTERVAL),
            log=where / "fleet.log"), "registered"
    return start


@contextlib.contextmanager
def deployment(bus: Bus, fleet: cluster_mod.Cluster, workers: int,
               servers: int = 1, heartbeats: Heartbeats | None = None):
    """``servers`` scheduler-servers (``workers`` each) on ``fleet``'s
    database and one topic, and a heartbeating fleet (``heartbeats``;
    default :func:`fleet_heartbeats`, started first); yields the client's
    ConfigOpts, the servers' :class:`Process` list and their ``/metrics``
    URLs (same order). Stops all afterwards."""
    path = fleet.path / "rpc"
    path.mkdir(exist_ok=True)
    topic = f"bench-scheduler-{uuidlib.uuid4().hex[:8]}"
    # Each server's HTTP listener on a port of its own (the default one
    # would be shared by every server of a run).
    ports = free_ports(servers)
    metrics_urls = [f"http://{LOOPBACK}:{port}/metrics" for port in ports]

    def config(name: str, where: Path, http_port: int | None) -> Path:
        where.mkdir(exist_ok=True)
        return cluster_mod.write_config(where, {
            "state_path": where,
            "transport_url": bus.transport_url,
            # Each server also listens on a queue of its own name.
            "host": name,
            "scheduler.topic": topic,
            "scheduler.workers": workers,
            "scheduler.max_attempts": 1,
            "scheduler.http_listen": "" if http_port is None
            else f"{LOOPBACK}:{http_port}",
            # Servers of a run find each other within a second of
            # starting, before its first row, not up to 10 s into it.
            "report_interval": 1,
            "database.connection": fleet.url,
            **fleet.extra,
        })

    # With one server, the client's config is the server's.
    client_config = config(f"bench-sched-{fleet.hosts}", path,
                           ports[0] if servers == 1 else None)
    conf = sched_conf.load(["--config-file", str(client_config)])
    started: list[servers_mod.Process] = []
    try:
        beating, ready = (heartbeats or fleet_heartbeats(fleet))(
            client_config, path)
        started.append(beating)
        beating.wait_for_output(ready, START_TIMEOUT)
        running = []
        for i in range(servers):
            where = path if servers == 1 else path / f"server-{i}"
            server_config = client_config if servers == 1 else config(
                f"bench-sched-{fleet.hosts}-{i}", where, ports[i])
            server = servers_mod.Process.python(
                "scheduler.cmd.server", "--config-file", str(server_config),
                log=where / "server.log")
            started.append(server)
            running.append(server)
        for server in running:
            _wait_until_serving(conf, server)
        servers_mod.wait_for_peers(running, START_TIMEOUT)
        yield conf, running, metrics_urls
    finally:
        for proc in reversed(started):
            proc.stop()


def _wait_until_serving(conf, server: servers_mod.Process) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    probe = SchedulerAPI(conf, timeout=2)
    try:
        while True:
            if not server.running():
                raise RuntimeError("scheduler-server exited "
                                   f"{server.proc.returncode}:\n"
                                   + server.output())
            try:
                probe.ping({})
                return
            except messaging.MessagingTimeout:
                if time.monotonic() > deadline:
                    raise RuntimeError("scheduler-server did not answer "
                                       "ping:\n" + server.output())
    finally:
        probe.transport.cleanup()


def measure(bus: Bus, fleet: cluster_mod.Cluster, limits: Limits,
            workers: int = 1, other_db: bool = False,
            servers: int = 1) -> list[Row]:
    """echo, ping and select at c1, taking turns, then echo and select at
    c8: each scheduler row has a bus row of the same seconds beside it. With
    ``other_db`` (the fleet is in another database than the run's main
    one) the rows are keyed ``<measure>_cN_<kind>``. The select rows
    also carry the servers' own split of their time
    (:mod:`benchmarks.service_split`)."""
    with deployment(bus, fleet, workers, servers) as (conf, running, urls):
        transport = rpc.get_transport(conf)
        meters = {"echo": cpu.Meter([bus.echo_server.proc.pid]),
                  "select": cpu.Meter([s.proc.pid for s in running])}
        try:
            return _measure(conf, transport, bus.echo_topic, fleet.hosts,
                            limits, fleet.kind if other_db else "", meters,
                            urls)
        finally:
            transport.cleanup()


def _measure(conf, transport, echo_topic: str, hosts: int,
             limits: Limits, other_db: str,
             meters: dict[str, cpu.Meter], metrics_urls: list[str]
             ) -> list[Row]:
    api = SchedulerAPI(conf, transport=transport, timeout=CALL_TIMEOUT)
    echo = EchoClient(transport, echo_topic, timeout=CALL_TIMEOUT)
    placer = Placer(api)
    select, release = placer.select, placer.release

    def bus_call() -> None:
        # The same payload the scheduler gets, handed back.
        echo.echo({"flavor": dict(FLAVOR),
                   "instance_uuids": [str(uuidlib.uuid4())]})

    for _ in range(WARMUP_CALLS):
        bus_call()
        select()
    release()

    rows = []
    suffix = f"_{other_db}" if other_db else ""
    for concurrency in (1, CONCURRENCY):
        echo_row = Row(f"echo_c{concurrency}{suffix}", hosts)
        select_row = Row(f"select_c{concurrency}{suffix}", hosts)
        turns = [
            turn(echo_row, bus_call, meters["echo"], concurrency, release),
            turn(select_row, select, meters["select"], concurrency,
                  release)]
        if concurrency == 1:
            # The service's own RPC path with nothing to decide: what of
            # select's excess over the echo is not the request's work.
            ping_row = Row(f"ping_c1{suffix}", hosts)
            turns.insert(1, turn(ping_row, lambda: api.ping({}),
                                  meters["select"], 1, lambda: None))
            rows.append(ping_row)
        before = service_split.scrape(metrics_urls)
        alternately(turns, limits, ROUNDS)
        # The histograms count select_destinations only: the echo's turns
        # between do not blur them.
        select_row.service_split = service_split.split(
            before, service_split.scrape(metrics_urls))
        rows += [echo_row, select_row]
    note_errors(rows)
    return rows


def note_errors(rows: list[Row]) -> None:
    """A note on each row whose calls failed: how many, and the first."""
    for row in rows:
        if row.errors:
            row.notes.append(f"{row.errors} of {row.errors + len(row.samples)}"
                             f" failed, first: {row.first_error}")


class Placer:
    """One m1.small instance at a time placed (and claimed) through
    ``api``; what it placed is given back by :meth:`release`."""

    def __init__(self, api: SchedulerAPI) -> None:
        self.api = api
        self.spec = {"flavor": dict(FLAVOR), "num_instances": 1}
        self.placed: list[str] = []

    def select(self) -> None:
        """One ``select_destinations`` (thread-safe: several client
        threads call it at once)."""
        dests = self.api.select_destinations({}, self.spec)
        self.placed.extend(d["uuid"] for d in dests)

    def release(self) -> None:
        """Release every claim placed so far: untimed, between turns, so
        the fleet never fills up."""
        placed = self.placed
        while placed:
            batch, placed[:] = placed[:500], placed[500:]
            self.api.release({}, batch)


def turn(row: Row, call: Callable[[], object], meter: cpu.Meter,
         concurrency: int, after: Callable[[], object]
         ) -> Callable[[Limits], None]:
    """One turn of ``row``: its share of calls, at ``concurrency``, and the
    serving process group's CPU over them (``meter``: the scheduler's
    workers, or the echo server) added to the row's; then ``after()``,
    untimed."""
    def one_turn(share: Limits) -> None:
        meter.start()
        if concurrency == 1:
            repeat(row, call, share, expected=EXPECTED)
        else:
            concurrently(row, call, share, concurrency, expected=EXPECTED)
        spent = meter.stop()
        if spent is not None:
            row.server_cpu = (row.server_cpu or 0.0) + spent
        after()
    return one_turn
