"""health.Monitor: real worker channel, real SQLite file, real notify
socket."""
from __future__ import annotations

import os
import socket

import pytest

from scheduler.service import health
from scheduler.service import sd_notify
from scheduler.service import worker_state as ws


@pytest.fixture
def systemd(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.setblocking(False)
    yield sock
    sock.close()


def received(sock) -> list[str]:
    messages = []
    while True:
        try:
            messages.append(sock.recv(4096).decode())
        except BlockingIOError:
            return messages


def test_ready_once_when_workers_consume_and_the_database_answers(
        conf, engine, systemd, tmp_path):
    states = ws.WorkerStates(ws.Channel(), 1)
    monitor = health.Monitor(states, health.DatabaseProbe(conf),
                             sd_notify.Notifier(systemd.getsockname()))
    assert monitor.check() == (False, "0/1 workers consuming; worker 0 "
                                      "starting")
    assert received(systemd) == ["STATUS=0/1 workers consuming; worker 0 "
                                 "starting"]

    states.channel.report(0, ws.CONSUMING)
    assert monitor.check() == (True, "1/1 workers consuming")
    assert monitor.check() == (True, "1/1 workers consuming")
    assert received(systemd) == ["READY=1\nSTATUS=1/1 workers consuming"]

    path = tmp_path / "scheduler.sqlite"
    os.rename(path, tmp_path / "away")
    healthy, line = monitor.check()
    assert not healthy
    assert line == (f"1/1 workers consuming; database: database file "
                    f"{path} does not exist")
    assert not path.exists()   # the probe did not create it
    os.rename(tmp_path / "away", path)
    assert monitor.check()[0]
    assert received(systemd) == [f"STATUS={line}",
                                 "STATUS=1/1 workers consuming"]

    monitor.stopping()
    assert received(systemd) == ["STOPPING=1\nSTATUS=stopping"]


@pytest.mark.parametrize("url", ["postgresql+psycopg2://u:p@127.0.0.1:{}/d",
                                 "mysql+pymysql://u:p@127.0.0.1:{}/d"])
def test_a_database_server_that_never_answers_is_named_as_unreachable(
        conf, monkeypatch, url):
    """A server that accepts and never answers (frozen, or behind a
    partition the kernel still ACKs for): the probe's line said
    "database ... failed: ... timeout expired; check [database]
    connection", as if the URL were wrong."""
    monkeypatch.setattr(health, "DB_CONNECT_TIMEOUT", 1)
    silent = socket.create_server(("127.0.0.1", 0))
    try:
        conf.set_override("connection",
                          url.format(silent.getsockname()[1]),
                          group="database")
        line = health.DatabaseProbe(conf).problem()
    finally:
        silent.close()
    assert line.startswith("cannot open database "), line
    assert line.endswith("check [database] connection and that the "
                         "database server is up"), line
