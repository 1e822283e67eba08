"""Run every command the documentation shows and compare its output.

How examples are marked and compared: :mod:`tests.doc_examples`. Each page
with examples to run is one test: a fresh directory ``D`` with its own
``scheduler.conf`` (the session's RabbitMQ, a topic of its own, SQLite
in a state directory of its own, one worker, no HTTP listener,
compute services up for an hour after a heartbeat), the page's commands run
in order from the top of the checkout with the project's scripts on
``PATH``, and each server a ``start`` example starts stopped at the end.
"""
from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import oslo_messaging as messaging
import pytest

from scheduler import conf as sched_conf
from scheduler.rpc.client import SchedulerAPI
from tests import doc_examples
from tests.fixtures.config import write_config
from tests.functional.conftest import stop_process_groups

COMMAND_TIMEOUT = 60
SERVER_START_TIMEOUT = 60


def _pages() -> list[Path]:
    return [path for path in doc_examples.sources()
            if any(e.mode != "skip" for e in doc_examples.parse(path)[0])]


class Session:
    """One page's deployment: its directory, config, environment, servers."""

    def __init__(self, path: Path, rabbitmq) -> None:
        self.dir = path
        # As long as /var/lib/scheduler, which it stands for.
        self.state = Path(tempfile.mkdtemp(prefix="sched", dir="/tmp"))
        self.port = rabbitmq.transport_url.rsplit(":", 1)[1].strip("/")
        self.config = write_config(path, {
            "state_path": self.state,
            "transport_url": rabbitmq.transport_url,
            "host": "scheduler-1",
            "scheduler.topic": f"scheduler-{uuid.uuid4().hex}",
            "scheduler.workers": 1,
            "scheduler.http_listen": "",
            # A fleet registered --once stays up for the whole page.
            "scheduler.service_down_time": 3600,
        })
        self.env = dict(os.environ)
        bindir = str(Path(sys.executable).parent)
        self.env["PATH"] = bindir + os.pathsep + self.env.get("PATH", "")
        self.env["COLUMNS"] = "80"
        self.servers: list[subprocess.Popen] = []
        self.logs: list = []

    def command(self, text: str) -> str:
        """The documented command with the test's paths."""
        for shown, real in doc_examples.PATHS.items():
            text = text.replace(shown, real.format(D=self.dir, S=self.state))
        return text

    def output(self, text: str) -> list[str]:
        """What a command printed, with the documented paths and
        broker address."""
        for shown, real in doc_examples.PATHS.items():
            text = text.replace(real.format(D=self.dir, S=self.state), shown)
        text = text.replace(f"127.0.0.1:{self.port}", "127.0.0.1:5672")
        return text.splitlines()

    def run(self, text: str) -> list[str]:
        result = subprocess.run(
            ["bash", "-c", self.command(text)], cwd=doc_examples.ROOT,
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, text=True, timeout=COMMAND_TIMEOUT)
        return self.output(result.stdout)

    def start(self, text: str) -> None:
        log = open(self.dir / f"server-{len(self.servers)}.log", "w")
        self.logs.append(log)
        proc = subprocess.Popen(
            ["bash", "-c", "exec " + self.command(text)],
            cwd=doc_examples.ROOT, env=self.env, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        self.servers.append(proc)
        api = SchedulerAPI(sched_conf.load(["--config-file",
                                             str(self.config)]), timeout=2)
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise AssertionError(f"{text!r} exited:\n"
                                         + Path(log.name).read_text())
                try:
                    api.ping({})
                    return
                except messaging.MessagingTimeout:
                    continue
        finally:
            api.transport.cleanup()
        raise AssertionError(f"{text!r} did not answer within "
                             f"{SERVER_START_TIMEOUT}s:\n"
                             + Path(log.name).read_text())

    def close(self) -> None:
        stop_process_groups(self.servers)
        for log in self.logs:
            log.close()
        shutil.rmtree(self.state, ignore_errors=True)


@pytest.mark.parametrize(
    "page", _pages(), ids=lambda p: str(p.relative_to(doc_examples.ROOT)))
def test_page_examples(page, rabbitmq, tmp_path):
    examples, _ = doc_examples.parse(page)
    session = Session(tmp_path, rabbitmq)
    failures = []
    try:
        for example in examples:
            if example.mode == "skip":
                continue
            if example.mode == "start":
                session.start(example.commands[0].text)
                continue
            for command in example.commands:
                actual = session.run(command.text)
                if not doc_examples.matches(command.output, actual):
                    failures.append(
                        f"{example.where(command)}: $ {command.text}\n"
                        f"--- shown\n" + "\n".join(command.output)
                        + "\n--- printed\n" + "\n".join(actual))
    finally:
        session.close()
    assert not failures, "\n\n".join(failures)
