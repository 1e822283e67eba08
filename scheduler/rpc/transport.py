"""RPC plumbing shared by server and client: transport, target, the JSON
serializer, which exceptions may be rebuilt on the caller's side, what a
failed call tells its caller, and how often a server's listener wakes with
no message."""
from __future__ import annotations

from typing import Any

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging.rpc import dispatcher as rpc_dispatcher
from oslo_messaging.rpc import server as rpc_server

LOG = logging.getLogger(__name__)

#: RPC API version the server implements; 1.0 had select_destinations,
#: release and ping, 1.1 added rank_destinations, 1.2 confirm, 1.3
#: confirm_move and revert_move (and ``spec.move``), 1.4 select_stack,
#: rank_stack and release_stack, 1.5 plan_drain, cancel_drain and
#: capacity.
API_VERSION = "1.5"

#: Only our own exception module may be re-raised remotely: oslo.messaging
#: imports the named module on the caller, so the list must stay this short.
ALLOWED_EXMODS = ["scheduler.exception"]


#: Seconds an idle RPC listener first waits for a message before it wakes
#: anyway; each wake with nothing to do doubles it, up to oslo.messaging's
#: own 5 s, and a message sets it back here. oslo.messaging starts at
#: 1 ms.
LISTENER_WAKE = 0.25


def quiet_listener_polling(wake: float = LISTENER_WAKE) -> bool:
    """Make the RabbitMQ driver's listeners in this process wake after
    ``wake`` seconds without a message, not 1 ms.

    Why: a listener wakes after 1, 2, 4 ... ms with no message to run the
    acks and requeues that request threads queued for it. An RPC listener
    never has any (its driver acks each message as it arrives, in the
    listener's own thread), yet every wake is a whole consume cycle
    (``ensure``, a socket timeout, an exception) that takes the GIL from
    the request being served. A worker whose requests each take a few ms,
    and that shares a topic with other workers, woke three or four times
    per request: 0.9-1.2 ms of CPU per request in its listener thread,
    0.42-0.46 ms with this (10,000 hosts, one call at a time, measured per
    thread). A message still wakes the listener at once: this changes
    only how often it wakes with nothing to do. Replies are unaffected
    (their waiter acks in its own thread too).

    Notification listeners do queue acks; none runs in our processes.
    The setting is the driver's module constant (there is no option for
    it); returns False, changing nothing, if this oslo.messaging has none.
    """
    if not isinstance(getattr(amqpdriver, "ACK_REQUEUE_EVERY_SECONDS_MIN",
                              None), float):
        return False
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = wake
    return True


def check_server_options(conf: cfg.ConfigOpts) -> None:
    """oslo.messaging's ``[DEFAULT] executor_thread_pool_size``, declared
    without a bound, is one an RPC server can use: below 1 the worker's
    server failed to start on "ValueError: max_workers must be greater
    than zero", naming no option.

    :raises ConfigError: naming the option, its value and the file.
    """
    from oslo_messaging import server as messaging_server

    from scheduler import exception

    conf.register_opts(messaging_server._pool_opts)
    value = conf.executor_thread_pool_size
    if value >= 1:
        return
    location = conf.get_location("executor_thread_pool_size")
    where = f" in {location.detail}" if location and location.detail else ""
    raise exception.ConfigError(
        f"[DEFAULT] executor_thread_pool_size = {value}{where}: must be at "
        f"least 1; fix the value in the configuration file")


def get_transport(conf: cfg.ConfigOpts) -> messaging.Transport:
    return messaging.get_rpc_transport(conf,
                                       allowed_remote_exmods=ALLOWED_EXMODS)


def get_target(conf: cfg.ConfigOpts, server: str | None = None
               ) -> messaging.Target:
    return messaging.Target(topic=conf.scheduler.topic, server=server,
                            version=API_VERSION)


def get_server(conf: cfg.ConfigOpts, transport: messaging.Transport,
               endpoints: list) -> rpc_server.RPCServer:
    """A threading-executor server on the shared topic (competing consumers)
    and on this server's own ``host``; only ``@expose``d methods are
    callable. Its listener polls quietly (:func:`quiet_listener_polling`).
    """
    quiet_listener_polling()
    # get_rpc_server with our dispatcher (it takes no dispatcher class).
    dispatcher = Dispatcher(endpoints, messaging.serializer.NoOpSerializer(),
                            messaging.rpc.ExplicitRPCAccessPolicy)
    return rpc_server.RPCServer(transport,
                                get_target(conf, server=conf.host),
                                dispatcher, executor="threading")


#: What the server logs, with its traceback, for a call that failed
#: unexpectedly (oslo.messaging's own words for it, which
#: :mod:`scheduler.rpc.malformed` recognises).
UNEXPECTED = "Exception during message handling"


def without_traceback(exc: BaseException
                      ) -> rpc_dispatcher.ExpectedException:
    """``exc`` wrapped for oslo.messaging's server to reply with, as it
    replies with any ``ExpectedException``: its class, message and args,
    and no traceback.

    Why: the reply carries ``traceback.format_exception`` of the exc_info
    handed over, file paths and source lines of the server included, and
    the caller's deserializer appends it to the exception's text. With no
    traceback, and no cause or context (``format_exception`` would print
    theirs), that text is the one line ``module.Class: message``.
    ``exc`` is changed: its chain is cut (it is only replied with now).
    """
    exc.__cause__ = None
    exc.__suppress_context__ = True
    expected = rpc_dispatcher.ExpectedException()
    expected.exc_info = (type(exc), exc, None)
    return expected


class Dispatcher(rpc_dispatcher.RPCDispatcher):
    """oslo.messaging's RPC dispatcher, but no failure it dispatches
    reaches the caller with the server's traceback.

    Expected failures (``InvalidRequest``, ``NoValidHost``,
    ``ServiceUnavailable``, nova's ``NoValidHost``: whatever an endpoint
    raises as ``ExpectedException``) go back as class and message, as
    before, and are not logged here (the endpoint logged its line).
    Anything else — a bug, an unknown method or version, arguments a
    method does not take — is logged here with its traceback at ERROR,
    as oslo.messaging's server would (so :mod:`scheduler.rpc.malformed`
    still turns a malformed call into one warning), and the caller gets
    its class and message alone: the traceback is for the operator, in
    the server's log.
    """

    def dispatch(self, incoming: Any) -> Any:
        """:raises ExpectedException: every failure, without traceback."""
        try:
            return super().dispatch(incoming)
        except rpc_dispatcher.ExpectedException as e:
            raise without_traceback(e.exc_info[1]) from None
        except Exception as e:
            if (isinstance(e, rpc_dispatcher.NoSuchMethod)
                    and e.method.endswith("_ignore_errors")):
                # oslo.messaging's server logs these at DEBUG too.
                LOG.debug("Method %s not found", e.method)
            else:
                LOG.exception(UNEXPECTED)
            raise without_traceback(e) from None
