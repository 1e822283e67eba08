"""The real servers a run needs, from the test fixtures (a private RabbitMQ,
PostgreSQL and MariaDB on 127.0.0.1, gone afterwards), and the subprocesses it
starts (scheduler-server, the heartbeating fleet, the echo server)."""
from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import time

from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgreSQLServer
from tests.fixtures.rabbitmq import RabbitMQServer

ROOT = Path(__file__).resolve().parent.parent


def unavailable(kinds: list[str]) -> list[str]:
    """Why the servers of ``kinds`` ("rabbitmq", "postgresql", "mysql")
    cannot be started here; empty if they can."""
    reasons = []
    checks = {"rabbitmq": RabbitMQServer, "postgresql": PostgreSQLServer,
              "mysql": MariaDBServer}
    for kind in kinds:
        why = checks[kind].unavailable_reason()
        if why:
            reasons.append(f"{kind}: {why}")
    return reasons


def start_rabbitmq() -> RabbitMQServer:
    server = RabbitMQServer(name_prefix="schedbench")
    server.start()
    return server


def start_database(kind: str, durable: bool = False
                   ) -> PostgreSQLServer | MariaDBServer:
    """A started server for the claim and end-to-end rows of ``kind``
    ("postgresql" or "mysql"); ``durable``: PostgreSQL with its own commit
    settings (fsync, a WAL flush per commit) rather than the tests'."""
    if kind == "postgresql":
        server = PostgreSQLServer(durable=durable)
    else:
        server = MariaDBServer()
    server.start()
    return server


class Process:
    """A child in a session of its own, output to a log file; stopped with
    SIGTERM to its process group (SIGKILL after ``grace`` seconds)."""

    def __init__(self, args: list[str], log: Path,
                 env: dict[str, str] | None = None):
        self.args = args
        self.log = log
        full_env = dict(os.environ)
        # python -m benchmarks.echo needs the checkout on the path.
        full_env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        full_env.update(env or {})
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=full_env, cwd=ROOT,
                start_new_session=True)

    @classmethod
    def python(cls, module: str, *args: str, log: Path,
               env: dict[str, str] | None = None) -> "Process":
        return cls([sys.executable, "-m", module, *args], log, env)

    def running(self) -> bool:
        return self.proc.poll() is None

    def output(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_for_output(self, text: str, timeout: float) -> None:
        """Block until ``text`` appears in the log."""
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            if not self.running():
                raise RuntimeError(
                    f"{' '.join(self.args[:4])} exited "
                    f"{self.proc.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{' '.join(self.args[:4])}: no {text!r} after "
                    f"{timeout:.0f}s:\n{self.output()}")
            time.sleep(0.1)

    def stop(self, grace: float = 30) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def wait_for_peers(started: list[Process], timeout: float) -> None:
    """Until every scheduler-server of ``started`` (on one topic) has found
    all the others in ``services`` (its log says so; a lone server has
    nobody to find): runs measure servers that know their peers, not the
    second after they start."""
    if len(started) < 2:
        return
    deadline = time.monotonic() + timeout
    for server in started:
        while f"of {len(started)} up on topic" not in server.log.read_text(
                errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError("scheduler-servers did not find each "
                                   "other:\n" + server.output())
            time.sleep(0.1)
