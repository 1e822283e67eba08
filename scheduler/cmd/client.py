"""scheduler-client: a conductor-like CLI for the scheduler RPC API.

In the spirit of the novaclient shell: global options, then a command
(``select``, ``rank``, ``release``, ``confirm``, ``confirm-move``,
``revert-move``, ``ping``, ``stack place|rank|release TEMPLATE``, ``host
drain|cancel-drain HOST``, ``capacity``) with its
own flags (:mod:`scheduler.cmd.client_parser`). Results are printed as
plain tables (:mod:`scheduler.cmd.client_output`; or, with ``--json``, as
the raw RPC result); expected failures are one ``ERROR: ...`` line on
stderr and exit status 1.

This module runs one command: the broker and the call, re-sends
included, bounded by ``--timeout``, the transport cleaned up, the result
or the error printed.
The request itself is :mod:`scheduler.cmd.client_request`'s.
"""
from __future__ import annotations

import argparse
import json
import logging as pylogging
import sys
import threading
import time
from typing import Any, Callable

from oslo_config import cfg
import oslo_messaging as messaging

from scheduler.rpc import broker
from scheduler.rpc import client as rpc_client
from scheduler.cmd import logs
from scheduler.cmd import parsing
from scheduler.cmd import waiting
from scheduler import errors
from scheduler.rpc.client import SchedulerAPI
from scheduler.cmd.client_parser import check_text
from scheduler.cmd.client_parser import parse_args
from scheduler.cmd.client_drain import capacity_spec
from scheduler.cmd.client_parser import RESENT
from scheduler.cmd.client_request import stack_request

#: Builds the API object from the loaded configuration (tests pass a fake).
ApiFactory = Callable[[cfg.ConfigOpts], Any]


def setup_logging(conf: cfg.ConfigOpts, debug: bool) -> None:
    """oslo.log to stderr (stdout is the command's output) unless the
    configuration says otherwise; DEBUG with ``--debug``, else WARNING,
    without the re-send WARNINGs of :class:`SchedulerAPI`: the command's
    one line says how many attempts its --timeout covered."""
    logs.setup_logging(conf, debug, "scheduler-client")
    pylogging.getLogger(rpc_client.__name__).setLevel(
        pylogging.NOTSET if debug else pylogging.ERROR)


def timeout_message(conf: cfg.ConfigOpts, args: argparse.Namespace) -> str:
    """Why a call timed out, naming the wait and the topic."""
    wait = f"{args.timeout:g}s"
    if args.method in RESENT:
        wait += f" ({conf.scheduler.max_attempts} attempts)"
    return (f"no scheduler answered within {wait} on topic "
            f"'{conf.scheduler.topic}'; is a scheduler-server running on "
            f"the same transport_url?")


def awaited(conf: cfg.ConfigOpts, args: argparse.Namespace) -> str:
    """What the command's call waits for, as the waiting line names it."""
    scheduler = f"a scheduler on topic '{conf.scheduler.topic}'"
    if args.method == "plan_drain":
        # A host with hundreds of instances in a large fleet plans for
        # seconds: say what takes them.
        return f"{scheduler} to plan the drain of {args.host}"
    return scheduler


def invoke(api: Any, args: argparse.Namespace, took: list[float]) -> Any:
    """Make the command's RPC call; append its wall time in ms to
    ``took``, whether it succeeded or not (for ``--timings``)."""
    started = time.perf_counter()
    try:
        return args.call(api, args)
    finally:
        took.append((time.perf_counter() - started) * 1000)


def _close(api: Any, seconds: float = 5) -> None:
    """Clean up the API's transport, if it has one; give up after
    ``seconds``, at most a few (a broker gone in mid-call would make it
    wait for ever; after a call that timed out, oslo.messaging's idle
    reply poller makes it wait up to 5 s)."""
    transport = getattr(api, "transport", None)
    if transport is not None:
        thread = threading.Thread(target=transport.cleanup, daemon=True,
                                  name="transport-cleanup")
        thread.start()
        thread.join(min(max(seconds, 0), 5))


def default_api(conf: cfg.ConfigOpts, timeout: float, deadline: float
                ) -> SchedulerAPI:
    """A SchedulerAPI whose calls end by ``deadline``, once the broker has
    answered within ``timeout``, the seconds left until then
    (oslo.messaging alone would retry it for ever).

    :raises errors.BrokerUnavailable: no broker within the timeout.
    :raises errors.BrokerRefused: the broker refused the credentials.
    """
    broker.check(conf, timeout)
    return SchedulerAPI(conf, deadline=deadline)


def with_deadline(func: Callable[[], Any], seconds: float,
                  message: Callable[[], str]) -> Any:
    """``func()``, or CommandFailed(``message()``) if it has not returned
    after ``seconds``: a broker lost in mid-call makes oslo.messaging
    reconnect for ever, and a command must not hang. The abandoned thread
    is a daemon, so it does not keep the process alive."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = func()
        except BaseException as e:   # re-raised in the caller's thread
            outcome["error"] = e

    thread = threading.Thread(target=target, name="rpc-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise errors.CommandFailed(message())
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def main(argv: list[str] | None = None,
         api_factory: ApiFactory | None = None) -> int:
    """Run one command. Returns 0, or 1 after one ``ERROR:`` line on
    stderr (:mod:`scheduler.errors`; an argument that is not UTF-8 text
    included, named by its flag); bad command-line input exits 2 with
    argparse's usage error. The whole command, broker check, call and
    re-sends, ends within ``--timeout`` (its default:
    :func:`~scheduler.cmd.client_parser.parse_args`); on a terminal, a
    wait of more than 2 s shows what it waits for
    (:mod:`scheduler.cmd.waiting`).

    :param api_factory: ``api_factory(conf)`` returns the object whose
        ``select_destinations``/``rank_destinations``/``release``/``ping``
        (and ``*_stack``) are called; defaults to :func:`default_api`.
    """
    args = parse_args(sys.argv[1:] if argv is None else argv)
    loaded: list[cfg.ConfigOpts] = []

    def body() -> int:
        # Before anything is read or sent: an argument that is not UTF-8
        # is named here, not by a server or an encoder far from it.
        check_text(args)
        conf = parsing.conf_from_args(args)
        loaded.append(conf)
        setup_logging(conf, args.debug)
        if args.command == "stack" and args.method != "release_stack":
            # The files first: a mistyped path must not wait for, and hide
            # behind, a broker that is down.
            args.stack = stack_request(args)
        if args.command == "capacity":
            args.capacity_spec = capacity_spec(args)
        # --timeout is the whole budget: the broker check spends part of
        # it, the call and its re-sends get what is left.
        deadline = time.monotonic() + args.timeout
        factory = api_factory or (
            lambda conf: default_api(conf, args.timeout, deadline))
        took: list[float] = []
        try:
            with waiting.Waiting(sys.stderr, deadline) as notice:
                notice.on(f"the message broker at "
                          f"{errors.broker_hosts(conf)}")
                api = factory(conf)
                notice.on(awaited(conf, args))
                try:
                    result = with_deadline(
                        lambda: invoke(api, args, took),
                        max(deadline - time.monotonic(), 0),
                        lambda: timeout_message(conf, args))
                finally:
                    # Within what is left of the budget: the line must not
                    # come seconds after the --timeout it names.
                    _close(api, deadline - time.monotonic())
        except messaging.MessagingTimeout:
            raise errors.CommandFailed(timeout_message(conf, args))
        finally:
            if args.timings and took:
                print(f"{args.method}: {took[0]:.1f} ms", file=sys.stderr)
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        else:
            print(args.render(result))
        return 0

    return errors.run(body, debug=args.debug,
                      conf=lambda: loaded[0] if loaded else None)


if __name__ == "__main__":
    sys.exit(main())
