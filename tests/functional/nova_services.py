"""Nova's own services as real processes: placement, ``nova-conductor``
and ``nova-compute`` (``fake.SmallFakeDriver``), run with the python of
the nova virtualenv (``tools/nova-venv``), never the project's.

What the caller brings: nova's API and cell databases, already built
(``nova-manage api_db sync``, ``cell_v2 map_cell0``, ``cell_v2
create_cell``, ``db sync``), and a broker. What this module adds:

- :class:`Placement`: openstack-placement on a loopback port of its own,
  ``[api] auth_strategy = noauth2``, its own SQLite database.
- :class:`NovaServices`: one conductor and N computes on the caller's
  databases and broker, started in the order nova needs and waited for by
  what they write in the cell database, then mapped with ``nova-manage
  cell_v2 discover_hosts``.

Every process runs in a session of its own, logs to a file in the given
directory (:meth:`NovaServices.logs` for a failing test's message), and is
stopped with SIGTERM, then SIGKILL after a timeout: none is left behind.
"""
from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
import contextlib
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
import json
import os
from pathlib import Path
import select
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import sqlalchemy as sa

from tests.fixtures import _net
from tests.fixtures.config import write_config
from tests.functional.conftest import stop_process_groups
from tests.functional.waits import wait_until

HERE = Path(__file__).resolve().parent
PLACEMENT_SERVER = HERE / "placement_server.py"

#: How long one nova service may take to start on the 2-core machine
#: while other tests run: a compute imports nova (some seconds of CPU),
#: waits for the conductor, then reports its node to placement.
START_TIMEOUT = 180

#: The token every nova service sends placement. Placement's noauth2
#: takes the token as "user[:project]" and gives the user "admin" the
#: admin role, which placement's default policy asks of a service
#: creating resource providers and allocations; any other token is
#: refused with 403.
PLACEMENT_TOKEN = "admin"


def tail(path: Path, lines: int = 60) -> str:
    """The last ``lines`` lines of a log file, or a note that it is
    missing."""
    if not path.exists():
        return f"({path} does not exist)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _spawn(args: list[str], log: Path,
           env: dict[str, str] | None = None,
           stdout: int | None = None) -> subprocess.Popen:
    """Start ``args`` in a session of its own (so its whole group can be
    signalled), stderr (and stdout unless asked for) into ``log``."""
    environ = dict(os.environ)
    environ.update(env or {})
    with open(log, "ab") as out:
        return subprocess.Popen(
            args, stdout=out if stdout is None else stdout, stderr=out,
            env=environ, start_new_session=True)


class Placement:
    """openstack-placement served on 127.0.0.1 with noauth2.

    :param venv: the nova virtualenv (placement is installed there).
    :param path: a directory of its own: ``placement.conf``, the SQLite
        database and the log go there.
    """

    def __init__(self, venv: Path, path: Path) -> None:
        self.venv = venv
        self.path = path
        self.log = path / "placement.log"
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        """The endpoint nova's ``[placement]`` is pointed at."""
        assert self.port is not None, "placement is not started"
        return f"http://{_net.LOOPBACK}:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Write the config, sync placement's schema, serve, and return
        once ``GET /`` answers 200.

        :raises AssertionError: with the log, if the schema sync fails or
            the server exits or does not answer within ``timeout`` s.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        write_config(self.path, {
            "api.auth_strategy": "noauth2",
            "placement_database.connection":
                f"sqlite:///{self.path}/placement.sqlite",
        }, name="placement.conf")
        # placement's WSGI module finds its config only through this
        # variable (placement.wsgi._get_config_files).
        env = {"OS_PLACEMENT_CONFIG_DIR": str(self.path)}
        synced = subprocess.run(
            [str(self.venv / "bin" / "placement-manage"), "--config-dir",
             str(self.path), "db", "sync"],
            capture_output=True, text=True, timeout=timeout,
            env={**os.environ, **env})
        if synced.returncode != 0:
            raise AssertionError("placement-manage db sync failed:\n"
                                 + synced.stderr[-3000:])
        self.proc = _spawn([str(self.venv / "bin" / "python"),
                            str(PLACEMENT_SERVER)], self.log, env=env,
                           stdout=subprocess.PIPE)
        # The server's first line is the port it bound.
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if not line.strip():
            raise AssertionError("placement never said its port:\n"
                                 + tail(self.log))
        self.port = int(line)
        deadline = time.monotonic() + timeout
        while _net.http_get(self.url + "/", timeout=5)[0] != 200:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("placement does not answer GET /:\n"
                                     + tail(self.log))
            time.sleep(0.1)

    def get(self, path: str) -> dict:
        """``GET path`` as nova's computes are authenticated (the admin
        token); the decoded JSON answer."""
        request = urllib.request.Request(
            self.url + path, headers={
                "X-Auth-Token": PLACEMENT_TOKEN,
                "OpenStack-API-Version": "placement latest"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        """SIGTERM, wait, SIGKILL after 30 s; safe to call twice."""
        if self.proc is not None:
            stop_process_groups([self.proc])
            self.proc.stdout.close()
            self.proc = None


#: The collections :class:`NoNetworks` lists as empty.
EMPTY = ("/v2.0/ports", "/v2.0/networks", "/v2.0/extensions")


class NoNetworks:
    """Neutron's API for a cloud with no ports, served from a thread of
    the test process: the one service here that is not the real one.

    Nova's compute asks neutron about an instance's ports when it deletes
    it, however it was booted (``_shutdown_instance`` refreshes the
    network info, ``deallocate_for_instance`` lists the ports to delete),
    and puts the instance in ERROR when neutron cannot be reached: no
    delete frees a host without a neutron endpoint. Instances here are
    booted with ``--nic none`` and so have no ports; this endpoint says
    exactly that: an empty list to every listing of ports, networks
    (nova's refresh of an instance's network info lists the project's)
    and extensions, and neutron's version document; 404 to anything
    else, so a call nova makes that it does not know shows up as nova's
    own error.
    ``requests`` records every request line, for a test to show.
    """

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://{_net.LOOPBACK}:{self._server.server_port}"

    def start(self) -> None:
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(f"GET {self.path}")
                path = urllib.parse.urlsplit(self.path).path.rstrip("/")
                if path in ("", "/v2.0"):
                    body = {"versions": [{
                        "id": "v2.0", "status": "CURRENT",
                        "links": [{"rel": "self",
                                   "href": f"{server_url()}/v2.0/"}]}]}
                elif path.removesuffix(".json") in EMPTY:
                    body = {path.removesuffix(".json").rsplit("/")[-1]: []}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass  # recorded in ``requests`` instead of on stderr

        self._server = ThreadingHTTPServer((_net.LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        server_url = lambda: self.url  # noqa: E731
        threading.Thread(target=self._server.serve_forever,
                         daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class NovaServices:
    """``nova-conductor`` and ``nova-compute`` processes of one cell.

    :param venv: the nova virtualenv.
    :param path: a directory of their own (configs, logs, state).
    :param transport_url: the broker every service and the cell use.
    :param control_exchange: nova's ``[DEFAULT] control_exchange``; the
        scheduler that serves them must listen on the same one.
    :param api_database: nova's API database URL.
    :param cell_database: the URL of the cell database the conductor and
        the computes write (a cell already in ``cell_mappings``).
    :param placement_url: where placement answers (noauth2).
    :param neutron_url: where neutron answers (:class:`NoNetworks`).
    :param computes: the computes' ``host`` names; with the fake driver
        each has one node of the same name.
    :param options: more nova options, ``group.option`` (or a bare
        option for ``[DEFAULT]``) to value, over this class's own: the
        base a caller's nova.conf brings.
    """

    def __init__(self, venv: Path, path: Path, *, transport_url: str,
                 control_exchange: str, api_database: str,
                 cell_database: str, placement_url: str, neutron_url: str,
                 computes: Iterable[str] = ("compute1", "compute2"),
                 options: dict[str, object] | None = None) -> None:
        self.venv = venv
        self.path = path
        self.computes = list(computes)
        self.transport_url = transport_url
        self.control_exchange = control_exchange
        self.api_database = api_database
        self.cell_database = cell_database
        self.placement_url = placement_url
        self.neutron_url = neutron_url
        self.options = dict(options or {})
        self.procs: dict[str, subprocess.Popen] = {}
        self._cell = sa.create_engine(cell_database)

    def config(self, host: str) -> Path:
        """Write (if not there yet) and return the config of the service
        that runs as ``host``."""
        config_file = self.path / f"nova-{host}.conf"
        if config_file.exists():
            return config_file
        state = self.path / host
        state.mkdir(parents=True, exist_ok=True)
        settings: dict[str, object] = {
            "host": host,
            "transport_url": self.transport_url,
            "control_exchange": self.control_exchange,
            "state_path": state,
            "instances_path": state / "instances",
            "my_ip": _net.LOOPBACK,
            # update_resources_interval stays nova's (the periodic task's
            # 60 s): a build's claim and a delete write the node's usage
            # at once, so the test waits on those, and fewer periodic
            # writes mean fewer chances for SQLite's lock (below).
            # nova's default heartbeat (10 s) and down time (60 s) are what
            # our server's liveness rule is checked against.
            "report_interval": 10,
            # Nova's computes tell the scheduler about every instance
            # change (the fanout casts our server confirms claims by).
            # True is nova's default; said here because it must be.
            "filter_scheduler.track_instance_changes": True,
            # A fixed endpoint and a fixed token (keystoneauth's
            # admin_token plugin): placement's noauth2 reads the token as
            # the user "admin" (see PLACEMENT_TOKEN). auth_type = none
            # would send the token "notused", which placement's policy
            # refuses (403) for every write a compute makes.
            "placement.auth_type": "admin_token",
            "placement.endpoint": self.placement_url,
            "placement.token": PLACEMENT_TOKEN,
            # The same for neutron: nova asks with its [neutron] service
            # credentials when the request's context is an admin's
            # without a token, as the boot/delete driver's is.
            "neutron.auth_type": "admin_token",
            "neutron.endpoint": self.neutron_url,
            "neutron.token": PLACEMENT_TOKEN,
            "oslo_concurrency.lock_path": state / "locks",
        }
        if host in self.computes:
            # A compute has no database access in nova (it asks the
            # conductor); given [api_database] it would try to read every
            # cell at start and log "No DB access allowed in nova-compute".
            settings["compute_driver"] = "fake.SmallFakeDriver"
        else:
            settings["api_database.connection"] = self.api_database
            settings["database.connection"] = self.cell_database
            # One conductor process (nova's default is one per CPU).
            settings["conductor.workers"] = 1
            settings["scheduler.workers"] = 1
        if host == "conductor" and self.cell_database.startswith("sqlite"):
            # On SQLite, nova's writers cannot overlap: oslo.db begins
            # each transaction with a plain (deferred) BEGIN, so two that
            # read and then write at once deadlock and SQLite fails one
            # at once with "database is locked" (no busy wait). Two
            # computes building at once made the conductor do exactly
            # that. One RPC thread makes the conductor, the only writer
            # of the cell database besides the boot/delete driver, do one
            # thing at a time.
            settings["executor_thread_pool_size"] = 1
        settings.update(self.options)
        return write_config(self.path, settings, name=config_file.name)

    def log(self, host: str) -> Path:
        return self.path / f"nova-{host}.log"

    def logs(self, lines: int = 40) -> str:
        """The tail of every service's log, for a failing test."""
        return "\n".join(f"--- {self.log(host).name} ---\n"
                         f"{tail(self.log(host), lines)}"
                         for host in self.procs)

    def errors(self) -> list[str]:
        """Every ERROR line nova's services logged, but the one a
        deployment without memcached always has (oslo.cache's optional
        backend that nova's venv does not install, tried at start)."""
        return [line for host in self.procs
                for line in self.log(host).read_text(
                    errors="replace").splitlines()
                if " ERROR " in line and "oslo_cache.memcache_pool" not in line]

    @contextlib.contextmanager
    def paused(self, *hosts: str) -> Iterator[None]:
        """These services frozen (SIGSTOP) for the block: what is sent to
        them waits in the broker, as for a compute busy elsewhere."""
        groups = [os.getpgid(self.procs[h].pid) for h in hosts]
        for group in groups:
            os.killpg(group, signal.SIGSTOP)
        try:
            yield
        finally:
            for group in groups:
                os.killpg(group, signal.SIGCONT)

    def _start(self, binary: str, host: str) -> None:
        self.procs[host] = _spawn(
            [str(self.venv / "bin" / binary), "--config-file",
             str(self.config(host))], self.log(host))

    def _rows(self, query: str, **params: object) -> list[sa.Row]:
        with self._cell.connect() as conn:
            return list(conn.execute(sa.text(query), params))

    def _wait(self, check, what: str, timeout: float) -> None:
        """Wait for ``check()`` while every started service still runs."""
        def ready() -> object:
            dead = [h for h, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise AssertionError(f"{', '.join(dead)} exited while "
                                     f"waiting for {what}:\n{self.logs()}")
            return check()
        try:
            wait_until(ready, what, timeout=timeout, poll=0.2)
        except AssertionError as e:
            if "never happened" in str(e):
                raise AssertionError(f"{e}\n{self.logs()}") from None
            raise

    def start(self, timeout: float = START_TIMEOUT) -> dict[str, float]:
        """Start the conductor, then the computes; return once each compute
        has its service and its reported node in the cell database and is
        mapped to the cell.

        :returns: seconds each phase took (``conductor``, ``computes``,
            ``discover_hosts``), for a test to report.
        :raises AssertionError: with every log's tail, when a service
            exits or does not get there within ``timeout`` s.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        took: dict[str, float] = {}
        began = time.monotonic()
        # A compute pings the conductor before it starts and waits for an
        # answer; the conductor first, so that wait is short.
        self._start("nova-conductor", "conductor")
        self._wait(lambda: self._rows(
            "SELECT 1 FROM services WHERE host = 'conductor' "
            "AND \"binary\" = 'nova-conductor' AND deleted = 0"),
            "nova-conductor's service row", timeout)
        took["conductor"] = time.monotonic() - began
        began = time.monotonic()
        for host in self.computes:
            self._start("nova-compute", host)
        # A node is reported once free_disk_gb is set: the resource
        # tracker's first full update, after which the compute has also
        # created its resource provider in placement.
        self._wait(lambda: {r.host for r in self._rows(
            "SELECT s.host FROM services s JOIN compute_nodes n "
            "ON n.host = s.host AND n.deleted = 0 "
            "WHERE s.\"binary\" = 'nova-compute' AND s.deleted = 0 "
            "AND n.free_disk_gb IS NOT NULL")} >= set(self.computes),
            f"{', '.join(self.computes)} registered in the cell database",
            timeout)
        took["computes"] = time.monotonic() - began
        began = time.monotonic()
        self.manage("cell_v2", "discover_hosts", "--verbose")
        took["discover_hosts"] = time.monotonic() - began
        return took

    def manage(self, *args: str, timeout: float = 120) -> str:
        """Run ``nova-manage`` with the conductor's config; its stdout.

        :raises AssertionError: on a non-zero exit, with its stderr.
        """
        done = subprocess.run(
            [str(self.venv / "bin" / "nova-manage"), "--config-file",
             str(self.config("conductor")), *args],
            capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"nova-manage {' '.join(args)} failed "
                                 f"({done.returncode}):\n{done.stderr[-3000:]}")
        return done.stdout

    def stop(self) -> None:
        """Stop every service (SIGTERM, SIGKILL after 30 s); safe to call
        twice."""
        stop_process_groups(list(self.procs.values()))
        self._cell.dispose()
