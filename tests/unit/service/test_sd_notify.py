"""sd_notify: datagrams on a real AF_UNIX socket, the environment taken."""
from __future__ import annotations

import os
import socket

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
