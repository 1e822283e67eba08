"""scheduler.broker: bounded connection attempts."""
from __future__ import annotations

import socket
import time

import oslo_messaging as messaging
import pytest

from scheduler import broker
from scheduler import conf as sched_conf


def _conf(url):
    conf = sched_conf.load([])
    messaging.TransportURL.parse(conf)   # registers transport_url
    conf.set_override("transport_url", url)
    return conf


def test_kombu_urls_quote_credentials_and_vhost():
    conf = _conf("rabbit://us%40er:p%3Ass@h1:5673,us%40er:p%3Ass@h2/v%2Fh")
    assert broker.kombu_urls(conf) == [
        "amqp://us%40er:p%3Ass@h1:5673/v%2Fh",
        "amqp://us%40er:p%3Ass@h2:5672/v%2Fh"]
    assert broker.describe_hosts(conf) == "h1:5673, h2:5672"


def test_nothing_listening_fails_within_the_budget():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = _conf(f"rabbit://u:p@127.0.0.1:{port}/")
    started = time.monotonic()
    with pytest.raises(broker.BrokerUnavailable) as raised:
        broker.check(conf, 1.5)
    assert time.monotonic() - started < 5
    assert str(raised.value).startswith(
        f"cannot reach the message broker at 127.0.0.1:{port} within 1.5s")
