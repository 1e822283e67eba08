"""scheduler-client: a conductor-like CLI for the scheduler RPC API.

In the spirit of the novaclient shell: global options, then a command
(``select``, ``rank``, ``release``, ``confirm``, ``confirm-move``,
``revert-move``, ``ping``, ``stack place|rank|release TEMPLATE``) with its
own flags. Results
are printed as plain tables (or, with ``--json``, as the raw RPC result);
expected failures are one ``ERROR: ...`` line on stderr and exit status 1.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys
import threading
import time
from typing import Any, Callable

from oslo_config import cfg
import oslo_messaging as messaging

from scheduler.rpc import broker
from scheduler.cmd import logs
from scheduler.cmd import parsing
from scheduler.cmd import table
from scheduler import errors
from scheduler import exception
from scheduler.request.spec import POLICIES
from scheduler.rpc.client import SchedulerAPI
from scheduler.stacks import template

#: Builds the API object from the loaded configuration (tests pass a fake).
ApiFactory = Callable[[cfg.ConfigOpts], Any]

SELECT_COLUMNS = ["uuid", "host", "nodename", "vcpus", "memory_mb", "disk_gb"]
STACK_COLUMNS = ["resource", "host", "nodename", "uuid", "vcpus",
                 "memory_mb", "disk_gb"]
#: Where the flavors file is looked for without --flavors: the system's
#: configuration, then this checkout's etc/.
FLAVORS_FILES = (Path("/etc/scheduler/flavors.yaml"),
                 Path(__file__).resolve().parents[2] / "etc" / "scheduler"
                 / "flavors.yaml")
FILTER_COLUMNS = ["name", "in", "out", "reason", "sample"]


# -- argument parsing -------------------------------------------------------

#: The longest --timeout: a day. A wait must end (``inf`` would wait for a
#: dead broker for ever) and fit the clocks it is handed to (1e10 s
#: overflows them).
MAX_TIMEOUT = 86400.0


def positive_float(text: str) -> float:
    """argparse type for a number of seconds greater than zero and at
    most :data:`MAX_TIMEOUT`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    if not value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_TIMEOUT:g} (a day), got {text!r}")
    return value


def _spec_parent() -> argparse.ArgumentParser:
    """The request-spec flags shared by ``select`` and ``rank``."""
    p = argparse.ArgumentParser(add_help=False)
    f = p.add_argument_group("flavor")
    f.add_argument("--flavor-name", metavar="NAME", help="flavor name")
    f.add_argument("--memory-mb", type=int, default=512, metavar="N",
                   help="RAM in MiB (default: %(default)s)")
    f.add_argument("--vcpus", type=int, default=1, metavar="N",
                   help="virtual CPUs (default: %(default)s)")
    f.add_argument("--root-gb", type=int, default=1, metavar="N",
                   help="root disk in GiB (default: %(default)s)")
    f.add_argument("--ephemeral-gb", type=int, default=0, metavar="N",
                   help="ephemeral disk in GiB (default: %(default)s)")
    f.add_argument("--swap", type=int, default=0, metavar="N",
                   help="swap in MiB (default: %(default)s)")
    f.add_argument("--extra-spec", type=parsing.key_value, action="append",
                   default=[], metavar="KEY=VALUE",
                   help="flavor extra spec (repeatable; last one wins)")
    r = p.add_argument_group("request")
    # Not an argparse mutually exclusive group: those lose their argument
    # group when inherited through parents=; parse_args checks instead.
    r.add_argument("--num-instances", type=int, metavar="N",
                   help="instances to place (default: 1)")
    r.add_argument("--instance-uuid", action="append", default=[],
                   metavar="UUID",
                   help="consumer id of one instance (repeatable; "
                        "instead of --num-instances)")
    r.add_argument("--availability-zone", metavar="AZ")
    r.add_argument("--hint", type=parsing.key_value, action="append", default=[],
                   metavar="KEY=VALUE",
                   help="scheduler hint (repeatable; a repeated key makes "
                        "a list), e.g. different_host=UUID")
    r.add_argument("--force-host", action="append", default=[],
                   metavar="HOST", help="only this host (repeatable)")
    r.add_argument("--force-node", action="append", default=[],
                   metavar="NODE", help="only this node (repeatable)")
    r.add_argument("--ignore-host", action="append", default=[],
                   metavar="HOST", help="never this host (repeatable)")
    r.add_argument("--aggregate", action="append", default=[],
                   metavar="AGG[,AGG...]",
                   help="requested_destination.aggregates: the host must be "
                        "in one of these aggregates (uuids or names); "
                        "repeat to require several such sets")
    r.add_argument("--project-id", metavar="ID")
    r.add_argument("--user-id", metavar="ID")
    r.add_argument("--image-property", type=parsing.key_value, action="append",
                   default=[], metavar="KEY=VALUE",
                   help="image property (repeatable; last one wins)")
    r.add_argument("--group-policy", choices=POLICIES, metavar="POLICY",
                   help="server group policy: " + ", ".join(POLICIES))
    r.add_argument("--group-uuid", metavar="UUID",
                   help="server group id (needs --group-policy)")
    r.add_argument("--group-member", action="append", default=[],
                   metavar="UUID",
                   help="an instance already in the group (repeatable; "
                        "needs --group-policy)")
    return p


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: global options, then one command."""
    parser = argparse.ArgumentParser(
        prog="scheduler-client",
        description="Ask the scheduler service where instances would go, "
                    "over its RPC API.")
    parsing.add_config_args(parser)
    parser.add_argument("--debug", action="store_true",
                        help="debug logging; tracebacks on unexpected "
                             "errors")
    parser.add_argument("--timings", action="store_true",
                        help="print the wall time of the RPC call to "
                             "stderr")
    parser.add_argument("--timeout", type=positive_float, metavar="SEC",
                        help="seconds to wait for a reply, at most "
                             f"{MAX_TIMEOUT:g} (default: [DEFAULT] "
                             "rpc_response_timeout)")
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="COMMAND")
    spec = _spec_parent()

    p = commands.add_parser("select", parents=[spec],
                            help="place instances and claim resources")
    p.add_argument("--return-alternates", action="store_true",
                   help="also return alternate hosts per instance")
    p.add_argument("--move", action="store_true",
                   help="move the instances (--instance-uuid) that hold "
                        "claims: claim new hosts and keep the old ones "
                        "until confirm-move or revert-move")
    p.set_defaults(method="select_destinations", call=call_select,
                   render=render_select)

    p = commands.add_parser("rank", parents=[spec],
                            help="dry run: rank hosts, show the filters")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="hosts to show (default: %(default)s)")
    p.set_defaults(method="rank_destinations", call=call_rank,
                   render=render_rank)

    p = commands.add_parser("release", help="release instances' claims")
    p.add_argument("uuids", nargs="+", metavar="UUID")
    p.set_defaults(method="release", call=call_release,
                   render=render_release)

    p = commands.add_parser("confirm",
                            help="confirm instances' provisional claims")
    p.add_argument("uuids", nargs="+", metavar="UUID")
    p.set_defaults(method="confirm", call=call_confirm,
                   render=render_confirm)

    _stack_commands(commands)
    p = commands.add_parser(
        "confirm-move", help="finish instances' moves: release the sources")
    p.add_argument("uuids", nargs="+", metavar="UUID")
    p.set_defaults(method="confirm_move", call=call_confirm_move,
                   render=render_confirm_move)

    p = commands.add_parser(
        "revert-move",
        help="undo instances' moves: release the destinations")
    p.add_argument("uuids", nargs="+", metavar="UUID")
    p.set_defaults(method="revert_move", call=call_revert_move,
                   render=render_revert_move)

    p = commands.add_parser("ping", help="ask a scheduler who it is")
    p.add_argument("--server", metavar="HOST",
                   help="the server of this host (default: any)")
    p.set_defaults(method="ping", call=call_ping, render=render_ping)
    return parser


def _stack_commands(commands) -> None:
    """``stack place|rank|release TEMPLATE``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("template", metavar="TEMPLATE",
                        help="a HOT template (heat_template_version, "
                             "resources)")
    common.add_argument("--name", metavar="NAME",
                        help="the stack's name; its id is derived from it "
                             "(default: the template's file name without "
                             ".yaml)")
    common.add_argument("--stack-id", metavar="UUID",
                        help="the stack's id (instead of one derived from "
                             "--name)")
    common.add_argument("--flavors", metavar="FILE",
                        help="flavor names to sizes (default: "
                             "/etc/scheduler/flavors.yaml, else this "
                             "checkout's etc/scheduler/flavors.yaml: "
                             "nova's m1.*)")
    common.add_argument("--parameter", "-P", type=parsing.key_value,
                        action="append", default=[], metavar="KEY=VALUE",
                        help="template parameter (repeatable)")
    common.add_argument("--project-id", metavar="ID")
    common.add_argument("--user-id", metavar="ID")
    stack = commands.add_parser(
        "stack", help="place, rank or release a whole Heat stack")
    sub = stack.add_subparsers(dest="stack_command", required=True,
                               metavar="ACTION")
    p = sub.add_parser("place", parents=[common],
                       help="place and claim every server, all or nothing")
    p.set_defaults(method="select_stack", call=call_stack,
                   render=render_stack)
    p = sub.add_parser("rank", parents=[common],
                       help="dry run: the order and the plan, nothing "
                            "claimed")
    p.set_defaults(method="rank_stack", call=call_stack,
                   render=render_stack)
    p = sub.add_parser("release", parents=[common],
                       help="release every claim of the stack")
    p.set_defaults(method="release_stack", call=call_stack,
                   render=render_release)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and cross-check ``argv``; exits 2 with usage on bad input.
    ``--json`` is accepted before or after the command."""
    parser = build_parser()
    parsing.add_to_every_command(parser, "--json", action="store_true",
                             default=False,
                             help="print the raw RPC result as JSON")
    args = parser.parse_args(argv)
    if getattr(args, "group_uuid", None) and not args.group_policy:
        parser.error("--group-uuid needs --group-policy")
    if getattr(args, "group_member", None) and not args.group_policy:
        parser.error("--group-member needs --group-policy")
    if (getattr(args, "instance_uuid", None)
            and args.num_instances is not None):
        parser.error("--num-instances and --instance-uuid exclude each "
                     "other")
    return args


# -- the request spec -------------------------------------------------------

def hints_from_pairs(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``[(k, v)...]`` as a dict; a key given more than once maps to the
    list of its values in order, a key given once to its string."""
    hints: dict[str, Any] = {}
    for key, value in pairs:
        if key not in hints:
            hints[key] = value
        elif isinstance(hints[key], list):
            hints[key].append(value)
        else:
            hints[key] = [hints[key], value]
    return hints


def build_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The ``spec`` dict (DESIGN.md "The request spec") for the parsed
    ``select``/``rank`` flags. Values are not checked here: the server
    rejects a bad one with ``InvalidRequest`` naming the field."""
    spec: dict[str, Any] = {
        "flavor": {
            "name": args.flavor_name,
            "memory_mb": args.memory_mb,
            "vcpus": args.vcpus,
            "root_gb": args.root_gb,
            "ephemeral_gb": args.ephemeral_gb,
            "swap": args.swap,
            "extra_specs": dict(args.extra_spec),
        },
        "project_id": args.project_id,
        "user_id": args.user_id,
        "image": ({"properties": dict(args.image_property)}
                  if args.image_property else None),
        "availability_zone": args.availability_zone,
        "ignore_hosts": list(args.ignore_host),
        "force_hosts": list(args.force_host),
        "force_nodes": list(args.force_node),
        "scheduler_hints": hints_from_pairs(args.hint),
        "instance_group": None,
        "return_alternates": bool(getattr(args, "return_alternates", False)),
    }
    if getattr(args, "move", False):
        spec["move"] = True
    if args.instance_uuid:
        spec["instance_uuids"] = list(args.instance_uuid)
    else:
        spec["num_instances"] = (1 if args.num_instances is None
                                 else args.num_instances)
    if args.aggregate:
        spec["requested_destination"] = {"aggregates": list(args.aggregate)}
    if args.group_policy:
        spec["instance_group"] = {"policies": [args.group_policy]}
        if args.group_uuid:
            spec["instance_group"]["uuid"] = args.group_uuid
        if args.group_member:
            spec["instance_group"]["members"] = list(args.group_member)
    return spec


# -- commands: the RPC call, then the rendering of its result ---------------

def call_select(api: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    return api.select_destinations({}, build_spec(args))


def call_rank(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    return api.rank_destinations({}, build_spec(args), limit=args.limit)


def call_release(api: Any, args: argparse.Namespace) -> int:
    return api.release({}, list(args.uuids))


def call_confirm(api: Any, args: argparse.Namespace) -> int:
    return api.confirm({}, list(args.uuids))


def stack_request(args: argparse.Namespace) -> dict[str, Any]:
    """The ``select_stack`` request for the ``stack`` command's template.
    :raises InvalidRequest: the template, flavors or parameters are at
        fault (naming the field or file)."""
    flavors_file = args.flavors or next(
        (str(p) for p in FLAVORS_FILES if p.exists()), None)
    if flavors_file is None:
        raise exception.InvalidRequest(
            "--flavors: no flavors file given and none found at "
            + " or ".join(str(p) for p in FLAVORS_FILES))
    return template.to_stack(
        template.load_yaml(args.template, "template"),
        stack_id=stack_id(args),
        flavors=template.load_flavors(flavors_file),
        parameters=dict(args.parameter), project_id=args.project_id,
        user_id=args.user_id, stack_name=stack_name(args))


def stack_name(args: argparse.Namespace) -> str:
    """``--name``, else the template's file name without its suffix."""
    return args.name or Path(args.template).stem


def stack_id(args: argparse.Namespace) -> str:
    """``--stack-id``, else the id derived from the stack's name."""
    return args.stack_id or template.stack_id_for(stack_name(args))


def call_stack(api: Any, args: argparse.Namespace) -> Any:
    """The stack call; but for a release, with ``args.stack``: the request
    :func:`main` read from the files (:func:`stack_request`) before
    connecting."""
    if args.method == "release_stack":
        # The id is all a release needs: the template need not still be
        # readable, nor its parameters given again, nor the flavors found.
        return api.release_stack({}, stack_id(args))
    return getattr(api, args.method)({}, args.stack)


def call_ping(api: Any, args: argparse.Namespace) -> dict[str, str]:
    return api.ping({}, server=args.server)


def _number(value: Any) -> Any:
    """Floats to three decimals for tables; anything else unchanged."""
    return f"{value:.3f}" if isinstance(value, float) else value


def render_select(result: list[dict[str, Any]]) -> str:
    """One row per instance; an ``alternates`` column (their hosts) when
    the result carries alternates."""
    columns = list(SELECT_COLUMNS)
    if any("alternates" in d for d in result):
        columns.append("alternates")
    rows = []
    for d in result:
        row = {**(d.get("allocation") or {}), "uuid": d.get("uuid"),
               "host": d.get("host"), "nodename": d.get("nodename")}
        if "alternates" in d:
            row["alternates"] = ", ".join(
                a.get("host", "") for a in d["alternates"] or [])
        rows.append(row)
    return table.format_table(rows, columns)


def render_rank(result: dict[str, Any]) -> str:
    """The hosts best first (host, nodename, weight, one column per
    weigher), a blank line, then what each filter step removed."""
    hosts = result.get("hosts") or []
    weighers: list[str] = []
    for h in hosts:
        weighers += [w for w in h.get("weights") or {} if w not in weighers]
    rows = [{k: _number(v) for k, v in
             {**(h.get("weights") or {}), "host": h.get("host"),
              "nodename": h.get("nodename"),
              "weight": h.get("weight")}.items()} for h in hosts]
    steps = [{**s, "sample": ", ".join(s.get("sample") or [])}
             for s in result.get("filters") or []]
    parts = [table.format_table(rows, ["host", "nodename", "weight"]
                              + weighers)]
    if "total" in result:
        parts.append(f"{len(hosts)} shown of {result['total']} hosts")
    parts += ["", table.format_table(steps, FILTER_COLUMNS)]
    return "\n".join(parts)


def render_stack(result: dict[str, Any]) -> str:
    """The stack id, the creation batches, then one row per server in
    creation order."""
    lines = [f"stack {result.get('stack_id')}"
             + (" (dry run: nothing claimed)" if result.get("dry_run")
                else ""),
             "order:"]
    lines += [f"  {i}. {', '.join(batch)}"
              for i, batch in enumerate(result.get("order") or [], 1)]
    placed = result.get("resources") or {}
    # Servers in creation order, as Heat would create them.
    names = [n for batch in result.get("order") or [] for n in batch]
    names += sorted(set(placed) - set(names))
    rows = [{**(d.get("allocation") or {}), "resource": name,
             "uuid": d.get("uuid"), "host": d.get("host"),
             "nodename": d.get("nodename")}
            for name in names for d in placed.get(name) or []]
    return "\n".join(lines + ["", table.format_table(rows, STACK_COLUMNS)])


def call_confirm_move(api: Any, args: argparse.Namespace) -> int:
    return api.confirm_move({}, list(args.uuids))


def call_revert_move(api: Any, args: argparse.Namespace) -> int:
    return api.revert_move({}, list(args.uuids))


def render_confirm_move(result: int) -> str:
    return f"confirmed {result} move(s)"


def render_revert_move(result: int) -> str:
    return f"reverted {result} move(s)"


def render_release(result: int) -> str:
    return f"released {result}"


def render_confirm(result: int) -> str:
    return f"confirmed {result}"


def render_ping(result: dict[str, str]) -> str:
    return table.format_table([result], ["host", "version", "driver"])


# -- running ----------------------------------------------------------------

def setup_logging(conf: cfg.ConfigOpts, debug: bool) -> None:
    """oslo.log to stderr (stdout is the command's output) unless the
    configuration says otherwise; DEBUG with ``--debug``, else WARNING."""
    logs.setup_logging(conf, debug, "scheduler-client")


def timeout_message(conf: cfg.ConfigOpts, args: argparse.Namespace) -> str:
    """Why a call timed out, naming the wait and the topic."""
    timeout = args.timeout
    if timeout is None:
        try:
            timeout = conf.rpc_response_timeout
        except cfg.NoSuchOptError:   # no real transport was made
            timeout = None
    wait = "the RPC timeout" if timeout is None else f"{timeout:g}s"
    if args.method in ("select_destinations", "select_stack"):
        wait += f" (each of {conf.scheduler.max_attempts} attempts)"
    return (f"no scheduler answered within {wait} on topic "
            f"'{conf.scheduler.topic}'; is a scheduler-server running on "
            f"the same transport_url?")


def invoke(api: Any, args: argparse.Namespace) -> Any:
    """Make the command's RPC call; with ``--timings`` print its wall time
    in ms to stderr, whether it succeeded or not."""
    started = time.perf_counter()
    try:
        return args.call(api, args)
    finally:
        if args.timings:
            elapsed = (time.perf_counter() - started) * 1000
            print(f"{args.method}: {elapsed:.1f} ms", file=sys.stderr)


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


def rpc_timeout(conf: cfg.ConfigOpts, args: argparse.Namespace) -> float:
    """``--timeout``, else ``[DEFAULT] rpc_response_timeout``."""
    if args.timeout is not None:
        return args.timeout
    try:
        return conf.rpc_response_timeout
    except cfg.NoSuchOptError:   # registered with a transport only
        return 60   # oslo.messaging's default


def budget(conf: cfg.ConfigOpts, args: argparse.Namespace) -> float:
    """Seconds the whole command may wait for the broker and the replies:
    the RPC timeout per attempt."""
    timeout = rpc_timeout(conf, args)
    if args.method in ("select_destinations", "select_stack"):
        timeout *= conf.scheduler.max_attempts
    return timeout


def default_api(conf: cfg.ConfigOpts, args: argparse.Namespace
                ) -> SchedulerAPI:
    """A SchedulerAPI with ``--timeout``, once the broker has answered
    within the timeout (oslo.messaging alone would retry it for ever).

    :raises broker.BrokerUnavailable: no broker within the timeout.
    :raises broker.BrokerRefused: the broker refused the credentials.
    """
    broker.check(conf, rpc_timeout(conf, args))
    return SchedulerAPI(conf, timeout=args.timeout)


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
    stderr (:mod:`scheduler.errors`); bad command-line input exits 2
    with argparse's usage error. The broker connection and the call are
    bounded by ``--timeout`` (per attempt of a select).

    :param api_factory: ``api_factory(conf)`` returns the object whose
        ``select_destinations``/``rank_destinations``/``release``/``ping``
        (and ``*_stack``) are called; defaults to ``SchedulerAPI`` with ``--timeout``.
    """
    args = parse_args(sys.argv[1:] if argv is None else argv)
    factory = api_factory or (lambda conf: default_api(conf, args))
    loaded: list[cfg.ConfigOpts] = []

    def body() -> int:
        conf = parsing.conf_from_args(args)
        loaded.append(conf)
        setup_logging(conf, args.debug)
        if args.command == "stack" and args.method != "release_stack":
            # The files first: a mistyped path must not wait for, and hide
            # behind, a broker that is down.
            args.stack = stack_request(args)
        # --timeout is the whole budget: the broker check spends part of
        # it, the call gets what is left (plus a second for the reply).
        deadline = time.monotonic() + budget(conf, args)
        try:
            api = factory(conf)
            try:
                result = with_deadline(
                    lambda: invoke(api, args),
                    max(deadline - time.monotonic(), 0) + 1,
                    lambda: timeout_message(conf, args))
            finally:
                # Within what is left of the budget: the line must not
                # come seconds after the --timeout it names.
                _close(api, deadline - time.monotonic())
        except messaging.MessagingTimeout:
            raise errors.CommandFailed(timeout_message(conf, args))
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        else:
            print(args.render(result))
        return 0

    return errors.run(body, debug=args.debug,
                      conf=lambda: loaded[0] if loaded else None)


if __name__ == "__main__":
    sys.exit(main())
