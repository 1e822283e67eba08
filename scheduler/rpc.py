"""RPC plumbing shared by server and client: transport, target, the JSON
serializer and which exceptions may be rebuilt on the caller's side."""
from __future__ import annotations

from oslo_config import cfg
import oslo_messaging as messaging

#: RPC API version the server implements; 1.0 had select_destinations,
#: release and ping, 1.1 added rank_destinations, 1.2 confirm, 1.3
#: confirm_move and revert_move (and ``spec.move``), 1.4 select_stack,
#: rank_stack and release_stack.
API_VERSION = "1.4"

#: Only our own exception module may be re-raised remotely: oslo.messaging
#: imports the named module on the caller, so the list must stay this short.
ALLOWED_EXMODS = ["scheduler.exception"]


def get_transport(conf: cfg.ConfigOpts) -> messaging.Transport:
    return messaging.get_rpc_transport(conf,
                                       allowed_remote_exmods=ALLOWED_EXMODS)


def get_target(conf: cfg.ConfigOpts, server: str | None = None
               ) -> messaging.Target:
    return messaging.Target(topic=conf.scheduler.topic, server=server,
                            version=API_VERSION)


def get_server(conf: cfg.ConfigOpts, transport: messaging.Transport,
               endpoints: list) -> messaging.RPCServer:
    """A threading-executor server on the shared topic (competing consumers)
    and on this server's own ``host``; only ``@expose``d methods are
    callable."""
    return messaging.get_rpc_server(
        transport, get_target(conf, server=conf.host), endpoints,
        executor="threading",
        serializer=messaging.serializer.NoOpSerializer(),
        access_policy=messaging.rpc.ExplicitRPCAccessPolicy)
