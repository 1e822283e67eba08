"""scheduler.rpc.transport: an RPC server's listener wakes quietly, and that is safe
because RPC messages leave it nothing to do on a wake; a failed call's reply
carries no server traceback."""
from __future__ import annotations

import json
import logging
import sys
import types

import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import common as rpc_common
from oslo_messaging.rpc import dispatcher as rpc_dispatcher
import pytest
from sqlalchemy import exc as sa_exc

from scheduler import exception
from scheduler.nova import exception as nova_exception
from scheduler.rpc import instrument
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


class Failing:
    """An endpoint whose methods fail as ours do: an expected error
    raised while handling another (the chain format_exception would
    print), a database failure, nova's refusal, and a bug."""
    target = messaging.Target(version="1.0")

    def __init__(self, conf):
        self.conf = conf

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def invalid(self, ctxt):
        try:
            {}["flavor"]
        except KeyError:
            raise exception.InvalidRequest("spec: 'flavor' is missing")

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost)
    @instrument.rpc_method
    def refused(self, ctxt):
        raise exception.NoValidHost("No valid host: 0 of 2 hosts fit")

    @messaging.expose
    @instrument.rpc_method
    def database_gone(self, ctxt):
        raise sa_exc.OperationalError("SELECT 1", {},
                                      Exception("no such table: nodes"))

    @messaging.expose
    @messaging.expected_exceptions(nova_exception.NoValidHost)
    @instrument.rpc_method
    def nova_refused(self, ctxt):
        raise nova_exception.NoValidHost("No valid host: no room")

    @messaging.expose
    @instrument.rpc_method
    def bug(self, ctxt):
        return {}["not there"]


def reply_to(conf, method: str) -> dict:
    """The failure our server replies with to a call of ``method``: what
    oslo.messaging's server takes from the dispatcher (``exc_info`` of an
    ExpectedException, else the exception being handled), serialized as
    its driver sends it."""
    transport = messaging.get_rpc_transport(conf, url="fake:")
    try:
        server = rpc.get_server(conf, transport, [Failing(conf)])
    finally:
        transport.cleanup()
    incoming = types.SimpleNamespace(
        ctxt={}, client_timeout=None,
        message={"method": method, "args": {}, "version": "1.0"})
    try:
        server.dispatcher.dispatch(incoming)
    except rpc_dispatcher.ExpectedException as e:
        failure = e.exc_info
    except Exception:
        failure = sys.exc_info()
    return json.loads(rpc_common.serialize_remote_exception(failure))


@pytest.mark.parametrize("method, module, cls, message", [
    ("invalid", "scheduler.exception", "InvalidRequest",
     "spec: 'flavor' is missing"),
    ("refused", "scheduler.exception", "NoValidHost",
     "No valid host: 0 of 2 hosts fit"),
    ("database_gone", "scheduler.exception", "ServiceUnavailable", None),
    ("nova_refused", "nova.exception", "NoValidHost",
     "No valid host: no room"),
    ("bug", "builtins", "KeyError", "'not there'"),
    ("no_such_method", "oslo_messaging.rpc.dispatcher", "NoSuchMethod",
     "Endpoint does not support RPC method no_such_method"),
])
def test_a_failure_is_replied_without_the_servers_traceback(
        conf, method, module, cls, message):
    """The reply names the class and carries the message, and its ``tb``
    is the one line ``module.Class: message``: no server file path,
    source line or chained exception, for expected failures and bugs
    alike (the server's log keeps a bug's traceback)."""
    reply = reply_to(conf, method)
    assert (reply["module"], reply["class"]) == (module, cls)
    if message is not None:
        assert reply["message"] == message
    name = cls if module == "builtins" else f"{module}.{cls}"
    assert reply["tb"] == [f"{name}: {reply['message']}\n"]
    # What a caller that may rebuild the class reads: the message alone.
    error = rpc_common.deserialize_remote_exception(
        json.dumps(reply), rpc.ALLOWED_EXMODS + ["nova.exception"])
    assert "Traceback" not in str(error) and 'File "' not in str(error)


def test_a_bug_keeps_its_traceback_in_the_servers_log(conf, caplog):
    caplog.set_level(logging.ERROR, logger=rpc.__name__)
    assert reply_to(conf, "bug")["class"] == "KeyError"
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == rpc.UNEXPECTED
    assert isinstance(record.exc_info[1], KeyError)
    assert record.exc_info[2] is not None    # the traceback is logged


def test_an_expected_failure_is_not_logged_by_the_dispatcher(conf, caplog):
    caplog.set_level(logging.DEBUG, logger=rpc.__name__)
    reply_to(conf, "invalid")
    assert [r for r in caplog.records if r.name == rpc.__name__] == []
