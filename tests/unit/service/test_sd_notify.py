"""sd_notify: datagrams on a real AF_UNIX socket, the environment taken."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from scheduler.service import sd_notify


@pytest.fixture
def listener(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(5)
    yield sock
    sock.close()


def test_takes_the_variables_out_of_the_environment(listener):
    environ = {"NOTIFY_SOCKET": listener.getsockname(),
               "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid()),
               "OTHER": "kept"}
    notifier = sd_notify.from_environment(environ)
    assert environ == {"OTHER": "kept"}
    assert notifier.watchdog_interval == 15.0
    assert notifier.send(READY="1", STATUS="2/2  workers\nconsuming")
    assert listener.recv(4096) == b"READY=1\nSTATUS=2/2 workers consuming"


def test_watchdog_meant_for_another_process_is_ignored():
    notifier = sd_notify.from_environment(
        {"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"})
    assert notifier.watchdog_interval is None


def test_bad_watchdog_value_means_no_watchdog():
    assert sd_notify.from_environment(
        {"WATCHDOG_USEC": "soon"}).watchdog_interval is None


def test_without_a_socket_nothing_is_sent():
    assert not sd_notify.from_environment({}).send(READY="1")


def test_a_socket_gone_is_a_warning_not_an_error(tmp_path):
    notifier = sd_notify.Notifier(str(tmp_path / "gone"))
    assert not notifier.send(STATUS="x")


def test_abstract_socket_address():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"sched-test-{os.getpid()}"
    sock.bind("\0" + name)
    sock.settimeout(5)
    try:
        assert sd_notify.Notifier("@" + name).send(STOPPING="1")
        assert sock.recv(4096) == b"STOPPING=1"
    finally:
        sock.close()


OUT_OF_FDS = """
import os, resource, sys
from scheduler.service import sd_notify
notifier = sd_notify.Notifier(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
print(notifier.send(WATCHDOG="1"))
"""


def test_notifies_when_the_process_is_out_of_descriptors(listener):
    # Issue 46: a socket per datagram failed with EMFILE while the HTTP
    # listener held every descriptor, and the watchdog pings stopped.
    done = subprocess.run([sys.executable, "-c", OUT_OF_FDS,
                           listener.getsockname()], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout == "True\n", done.stderr
    assert listener.recv(4096) == b"WATCHDOG=1"


def test_a_forked_child_has_no_socket_to_notify_with(listener):
    notifier = sd_notify.Notifier(listener.getsockname())
    pid = os.fork()
    if pid == 0:    # the child: 0 when it did not send
        os._exit(int(notifier.send(STATUS="from a worker")))
    assert os.waitpid(pid, 0)[1] == 0
    assert notifier.send(STATUS="from the main process")
    assert listener.recv(4096) == b"STATUS=from the main process"
