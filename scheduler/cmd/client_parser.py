"""``scheduler-client``'s command line: global options, then one command
(``select``, ``rank``, ``release``, ``confirm``, ``confirm-move``,
``revert-move``, ``ping``, ``stack place|rank|release TEMPLATE``) with its
own flags, each set up with the call it makes and the rendering of its
result.
"""
from __future__ import annotations

import argparse

from scheduler.cmd import client_drain
from scheduler.cmd import parsing
from scheduler.cmd.client_output import render_confirm
from scheduler.cmd.client_output import render_confirm_move
from scheduler.cmd.client_output import render_ping
from scheduler.cmd.client_output import render_rank
from scheduler.cmd.client_output import render_release
from scheduler.cmd.client_output import render_revert_move
from scheduler.cmd.client_output import render_select
from scheduler.cmd.client_output import render_stack
from scheduler.cmd.client_request import call_confirm
from scheduler.cmd.client_request import call_confirm_move
from scheduler.cmd.client_request import call_ping
from scheduler.cmd.client_request import call_rank
from scheduler.cmd.client_request import call_release
from scheduler.cmd.client_request import call_revert_move
from scheduler.cmd.client_request import call_select
from scheduler.cmd.client_request import call_stack
from scheduler.request.schema import POLICIES

#: The longest --timeout: a day. A wait must end (``inf`` would wait for a
#: dead broker for ever) and fit the clocks it is handed to (1e10 s
#: overflows them).
MAX_TIMEOUT = 86400.0
#: The default --timeout of ``ping``: what a person waits for before
#: wondering whether anything is there.
PING_TIMEOUT = 10.0
#: ... of ``host drain``: a host of hundreds of instances in a large fleet
#: plans for seconds, each of the re-sends too.
DRAIN_TIMEOUT = 120.0
#: ... of every other command: a placement may wait for the database
#: (a lock another session holds, ``[scheduler] db_lock_timeout``).
CALL_TIMEOUT = 30.0
#: The commands whose call is re-sent when it times out (``[scheduler]
#: max_attempts`` calls in all, within the one --timeout).
RESENT = frozenset({"select_destinations", "select_stack", "plan_drain"})


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
    r.add_argument("--hint", type=parsing.key_value, action="append",
                   default=[],
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
                        help="seconds the whole command may take: the "
                             "broker's answer, the call and its re-sends; "
                             f"at most {MAX_TIMEOUT:g} (default: "
                             f"{PING_TIMEOUT:g} for ping, {DRAIN_TIMEOUT:g} "
                             f"for host drain, {CALL_TIMEOUT:g} for the "
                             "others)")
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
    client_drain.add_commands(commands, FLAVORS_HELP)
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


FLAVORS_HELP = ("flavor names to sizes (default: "
                "/etc/scheduler/flavors.yaml, else this checkout's "
                "etc/scheduler/flavors.yaml: nova's m1.*)")


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
    common.add_argument("--flavors", metavar="FILE", help=FLAVORS_HELP)
    common.add_argument("--parameter", "-P", type=parsing.key_value,
                        action="append", default=[], metavar="KEY=VALUE",
                        help="template parameter (repeatable)")
    common.add_argument("--environment", "-e", action="append",
                        default=[], metavar="FILE",
                        help="Heat environment file (repeatable, merged "
                             "in order); templates it or the template "
                             "names are read relative to the file naming "
                             "them")
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


#: The arguments that are file paths (the template's stands for the
#: stack's name only through :func:`~scheduler.cmd.client_request.
#: stack_name`, which checks it).
PATHS = parsing.PATHS | {"template", "flavors", "environment"}


def check_text(args: argparse.Namespace) -> None:
    """Every argument but the paths is text the request can carry
    (:func:`scheduler.cmd.parsing.check_text`).

    :raises InvalidRequest: naming the first that is not, by its flag.
    """
    parsing.check_text(build_parser(), args, PATHS)


def full_parser() -> argparse.ArgumentParser:
    """:func:`build_parser` with ``--json`` on every command, before or
    after it: what the command parses (and the CLI reference shows)."""
    parser = build_parser()
    parsing.add_to_every_command(parser, "--json", action="store_true",
                                 default=False,
                                 help="print the raw RPC result as JSON")
    return parser


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and cross-check ``argv``; exits 2 with usage on bad input.
    ``--json`` is accepted before or after the command; ``timeout`` is
    the command's default when ``--timeout`` is not given."""
    parser = full_parser()
    args = parser.parse_args(argv)
    if args.timeout is None:
        args.timeout = {"ping": PING_TIMEOUT, "plan_drain": DRAIN_TIMEOUT
                        }.get(args.method, CALL_TIMEOUT)
    if getattr(args, "group_uuid", None) and not args.group_policy:
        parser.error("--group-uuid needs --group-policy")
    if getattr(args, "group_member", None) and not args.group_policy:
        parser.error("--group-member needs --group-policy")
    if (getattr(args, "instance_uuid", None)
            and args.num_instances is not None):
        parser.error("--num-instances and --instance-uuid exclude each "
                     "other")
    return args
