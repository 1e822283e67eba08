"""scheduler.rpc.transport: an RPC server's listener wakes quietly, and that is safe
because RPC messages leave it nothing to do on a wake."""
from __future__ import annotations

import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
import pytest

from scheduler.rpc import transport as rpc


@pytest.fixture
def listener_wake(monkeypatch):
    """Whatever a test sets, the suite gets oslo.messaging's value back."""
    monkeypatch.setattr(amqpdriver, "ACK_REQUEUE_EVERY_SECONDS_MIN",
                        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN)


def test_quiet_polling_sets_the_first_wake(listener_wake):
    assert rpc.quiet_listener_polling() is True
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == rpc.LISTENER_WAKE
    # Still below the driver's cap, so an idle listener keeps doubling.
    assert rpc.LISTENER_WAKE < amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX


def test_quiet_polling_changes_nothing_without_the_constant(monkeypatch):
    monkeypatch.delattr(amqpdriver, "ACK_REQUEUE_EVERY_SECONDS_MIN")
    assert rpc.quiet_listener_polling() is False
    assert not hasattr(amqpdriver, "ACK_REQUEUE_EVERY_SECONDS_MIN")


def test_every_server_we_build_polls_quietly(conf, listener_wake):
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = 0.001
    transport = messaging.get_rpc_transport(conf, url="fake:")
    try:
        rpc.get_server(conf, transport, [])
    finally:
        transport.cleanup()
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == rpc.LISTENER_WAKE


def _incoming(cls, handler: amqpdriver.MessageOperationsHandler):
    class Listener:
        msg_id_cache = set()
    return cls(Listener(), {}, {}, "unique", "msg", "reply_q", None,
               amqpdriver.ObsoleteReplyQueuesCache(), handler)


def test_rpc_messages_queue_no_work_for_a_wake():
    """The premise: the wakes exist to run queued acks and requeues, and an
    RPC message queues none. If an oslo.messaging upgrade moved RPC acks to
    the listener's wake, this fails before a 250 ms delay ships."""
    handler = amqpdriver.MessageOperationsHandler("test")
    message = _incoming(amqpdriver.AMQPIncomingMessage, handler)
    message.acknowledge()
    message.requeue()
    assert handler._tasks.qsize() == 0


def test_notification_messages_do_queue_work_for_a_wake():
    """The contrast that keeps the test above honest: a notification
    listener's ack waits for the wake (none runs in our processes)."""
    handler = amqpdriver.MessageOperationsHandler("test")
    message = _incoming(amqpdriver.NotificationAMQPIncomingMessage, handler)
    message.acknowledge()
    assert handler._tasks.qsize() == 1
