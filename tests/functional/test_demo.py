"""tools/demo: its ports come from options or the environment, and it
stops with its server's own line as soon as the server exits (issue 44:
with port 8796 taken it pinged for 5.5 minutes, then blamed the broker).

The demo runs in a copy of the tools folder next to a ``.venv`` that is
this Python's, with a tools/setup.sh that does nothing (the real one
would pip-install the project), against the session's broker."""
from __future__ import annotations

import os
from pathlib import Path
import shutil
import socket
import subprocess
import sys

REPO = Path(__file__).resolve().parents[2]


def demo_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "checkout"
    (tree / "tools").mkdir(parents=True)
    shutil.copy(REPO / "tools" / "demo", tree / "tools" / "demo")
    setup = tree / "tools" / "setup.sh"
    setup.write_text("#!/bin/sh\nexit 0\n")
    setup.chmod(0o755)
    (tree / ".venv").symlink_to(sys.prefix)
    return tree


def test_help_names_the_options_and_their_environment():
    result = subprocess.run([str(REPO / "tools" / "demo"), "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for name in ("--http-port PORT", "SCHEDULER_DEMO_HTTP_PORT",
                 "--transport-url URL", "SCHEDULER_DEMO_TRANSPORT_URL"):
        assert name in result.stdout, name


def test_a_taken_port_stops_the_demo_with_the_servers_line(tmp_path,
                                                          rabbitmq):
    tree = demo_tree(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # The port from the environment, the broker from an option.
        env = {**os.environ, "SCHEDULER_DEMO_HTTP_PORT": str(port),
               "PYTHONPATH": str(REPO)}
        # Well under the minutes it used to ping; a hang fails here.
        result = subprocess.run(
            [str(tree / "tools" / "demo"), "--transport-url",
             rabbitmq.transport_url], capture_output=True, text=True,
            timeout=90, env=env)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"ERROR: cannot listen on 127.0.0.1:{port} ([scheduler] "
        f"http_listen): Address already in use; choose a free address or "
        f"leave it empty to turn the listener off"), result.stderr
    assert lines[1:] == [
        "demo: scheduler-server exited (status 1); --http-port and "
        "--transport-url choose its port and broker (tools/demo --help)"]
    assert "$ " + str(tree) + "/.venv/bin/scheduler-client" \
        not in result.stdout


def test_a_port_that_is_not_one_is_refused_naming_the_option(tmp_path):
    result = subprocess.run(
        [str(demo_tree(tmp_path) / "tools" / "demo"), "--http-port", "x"],
        capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (
        2, "demo: --http-port (SCHEDULER_DEMO_HTTP_PORT): not a port: "
           "'x'\n")
