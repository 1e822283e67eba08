"""scheduler.rpc.broker: bounded connection attempts."""
from __future__ import annotations

import socket
import ssl
import time

import oslo_messaging as messaging
import pytest

from scheduler.rpc import broker
from scheduler import conf as sched_conf
from scheduler import errors


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


def test_nothing_listening_fails_within_the_budget():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = _conf(f"rabbit://u:p@127.0.0.1:{port}/")
    started = time.monotonic()
    with pytest.raises(errors.BrokerUnavailable) as raised:
        broker.check(conf, 1.5)
    assert time.monotonic() - started < 5
    assert str(raised.value).startswith(
        f"cannot reach the message broker at 127.0.0.1:{port} within 1.5s")


def test_tls_is_asked_of_kombu_as_oslo_messaging_asks_it(tmp_path):
    conf = _conf("rabbit://u:p@h1/")
    assert broker._ssl(conf) is False
    conf.set_override("ssl", True, group="oslo_messaging_rabbit")
    assert broker._ssl(conf) is True
    # The files must be there: one that is not is named (see below).
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "c.pem", "k.pem"))
    for path in (ca, cert, key):
        path.write_text("")
    conf.set_override("ssl_ca_file", str(ca), group="oslo_messaging_rabbit")
    conf.set_override("ssl_cert_file", str(cert),
                      group="oslo_messaging_rabbit")
    conf.set_override("ssl_key_file", str(key),
                      group="oslo_messaging_rabbit")
    assert broker._ssl(conf) == {
        "ca_certs": str(ca), "cert_reqs": ssl.CERT_REQUIRED,
        "certfile": str(cert), "keyfile": str(key)}
