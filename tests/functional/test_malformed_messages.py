"""Garbage published raw on the scheduler's topic costs one rate-limited
WARNING line naming what was wrong, no traceback, and the server keeps
serving."""
from __future__ import annotations

import json
import pickle
import re

import kombu


def publish_raw(transport_url: str, queue: str, bodies) -> None:
    """Publish each (body, content_type) straight into the topic's queue,
    as anyone with access to the broker could."""
    url = transport_url.replace("rabbit://", "amqp://", 1)
    with kombu.Connection(url) as conn:
        producer = conn.Producer()
        for body, content_type in bodies:
            producer.publish(body, routing_key=queue, exchange="",
                             content_type=content_type,
                             content_encoding="binary")


def test_malformed_messages_are_one_warning(make_deployment, rabbitmq):
    deployment = make_deployment()
    deployment.fleet(2)
    deployment.start_server()
    topic = deployment.conf.scheduler.topic
    envelope = {"oslo.version": "2.0", "oslo.message": json.dumps(
        {"method": "no_such_method", "args": {}, "version": "1.0"})}
    bad_args = {"oslo.version": "2.0", "oslo.message": json.dumps(
        {"method": "ping", "args": {"bogus": 1}, "version": "1.0"})}
    bodies = [(bytes(range(256)) * 4, "application/json"),
              (b"{not json", "application/json"),
              (b"[" * 100_000 + b"]" * 100_000, "application/json"),
              (pickle.dumps({"a": 1}), "application/x-python-serialize"),
              (json.dumps(envelope).encode(), "application/json"),
              (json.dumps(bad_args).encode(), "application/json")] * 20
    publish_raw(rabbitmq.transport_url, topic, bodies)
    # Still serving, after every message above was consumed (one queue,
    # in order).
    assert deployment.api.ping({})["host"] == deployment.conf.host
    log = deployment.server_log()
    assert "Traceback" not in log
    warnings = [line for line in log.splitlines()
                if "Dropped a malformed message" in line]
    assert 1 <= len(warnings) <= 2, warnings
    # The error's one-line summary follows (oslo.log appends it).
    assert re.search(r"WARNING .*Dropped a malformed message on the topic "
                     r"\(cannot decode it; DecodeError\): "
                     r"kombu.exceptions.DecodeError: \S", warnings[0]), \
        warnings
    assert " ERROR " not in log
