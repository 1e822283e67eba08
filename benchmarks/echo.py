"""The bus's own cost: a bare oslo.messaging RPC server whose one method
hands its argument back, on a topic of its own on the scheduler's broker.

Run as a process of its own, like scheduler-server, with the same
threading executor::

    python -m benchmarks.echo --config-file server.conf --topic TOPIC

and called with :class:`EchoClient` exactly as ``SchedulerAPI`` calls the
scheduler (same transport, serializer, payload). Its listener polls as
the scheduler's does (``rpc.quiet_listener_polling``).
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading

import oslo_messaging as messaging

from scheduler import conf as sched_conf
from scheduler.rpc import transport as rpc


class EchoEndpoint:
    target = messaging.Target(version="1.0")

    @messaging.expose
    def echo(self, ctxt, payload=None):
        return payload


class EchoClient:
    def __init__(self, transport: messaging.Transport, topic: str,
                 timeout: float):
        self.client = messaging.get_rpc_client(
            transport, messaging.Target(topic=topic, version="1.0"),
            serializer=messaging.serializer.NoOpSerializer(),
            timeout=timeout)

    def echo(self, payload):
        return self.client.call({}, "echo", payload=payload)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.echo")
    parser.add_argument("--config-file", required=True)
    parser.add_argument("--topic", required=True)
    args = parser.parse_args(argv)
    conf = sched_conf.load(["--config-file", args.config_file])
    transport = rpc.get_transport(conf)
    # The scheduler's listener setting: the floor is the same bus.
    rpc.quiet_listener_polling()
    server = messaging.get_rpc_server(
        transport, messaging.Target(topic=args.topic, server=conf.host),
        [EchoEndpoint()], executor="threading",
        serializer=messaging.serializer.NoOpSerializer(),
        access_policy=messaging.rpc.ExplicitRPCAccessPolicy)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    print(f"echo: serving topic {args.topic}", flush=True)
    stop.wait()
    server.stop()
    server.wait()
    transport.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
