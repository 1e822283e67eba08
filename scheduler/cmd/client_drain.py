"""``scheduler-client host drain|cancel-drain`` and ``capacity``: the
commands over RPC 1.5 (architecture.rst "Draining a host, and what-if"),
their requests and their tables."""
from __future__ import annotations

import argparse
from typing import Any

from scheduler import exception
from scheduler.cmd import table
from scheduler.cmd.client_request import flavors_file
from scheduler.stacks import files

MOVE_COLUMNS = ["instance", "from", "to", "nodename"]


def add_commands(commands, flavors_help: str) -> None:
    """Add ``host drain HOST``, ``host cancel-drain HOST`` and
    ``capacity`` to the ``commands`` subparsers."""
    host = commands.add_parser(
        "host", help="drain a host all or nothing, or cancel its drain")
    sub = host.add_subparsers(dest="host_command", required=True,
                              metavar="ACTION")
    p = sub.add_parser(
        "drain", help="plan a move for every instance on HOST (--apply: "
                      "claim them all and disable HOST)")
    p.add_argument("host", metavar="HOST")
    p.add_argument("--apply", action="store_true",
                   help="claim every move in one transaction and disable "
                        "the host (reason 'draining'); without it, a dry "
                        "run")
    p.add_argument("--same-aggregate", action="store_true",
                   help="keep each instance in an aggregate of HOST")
    p.set_defaults(method="plan_drain", call=call_drain, render=render_drain)
    p = sub.add_parser(
        "cancel-drain", help="release the moves of HOST's drain not yet "
                             "begun and enable HOST again")
    p.add_argument("host", metavar="HOST")
    p.set_defaults(method="cancel_drain", call=call_cancel_drain,
                   render=render_cancel_drain)

    p = commands.add_parser(
        "capacity", help="how many more instances of a flavor fit now")
    p.add_argument("--flavor", required=True, metavar="NAME",
                   help="a flavor name of the flavors file")
    p.add_argument("--flavors", metavar="FILE", help=flavors_help)
    p.add_argument("--az", metavar="AZ",
                   help="count only in this availability zone")
    p.add_argument("--without-host", action="append", default=[],
                   metavar="HOST",
                   help="as if this host were drained (its instances "
                        "moved elsewhere first); repeatable")
    p.set_defaults(method="capacity", call=call_capacity,
                   render=render_capacity)


def call_drain(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    return api.plan_drain({}, args.host, apply=args.apply,
                          same_aggregate=args.same_aggregate)


def call_cancel_drain(api: Any, args: argparse.Namespace) -> int:
    return api.cancel_drain({}, args.host)


def capacity_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The one-instance spec of ``--flavor`` (and ``--az``).
    :raises InvalidRequest: no flavors file, or no such flavor in it."""
    path = flavors_file(args)
    flavors = files.load_flavors(path)
    if args.flavor not in flavors:
        raise exception.InvalidRequest(
            f"--flavor: no flavor {args.flavor!r} in {path} (it has "
            f"{', '.join(sorted(flavors)[:10])})")
    fields = flavors[args.flavor]
    flavor = {k: fields[k] for k in ("name", "flavorid", "memory_mb",
                                     "vcpus", "root_gb", "ephemeral_gb",
                                     "swap", "extra_specs") if k in fields}
    spec: dict[str, Any] = {"flavor": flavor, "num_instances": 1}
    if args.az:
        spec["availability_zone"] = args.az
    return spec


def call_capacity(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    return api.capacity({}, args.capacity_spec,
                        without_hosts=args.without_host)


def render_drain(result: dict[str, Any]) -> str:
    """One row per move, then what was done."""
    rows = [{"instance": m["consumer_uuid"], "from": m["from"]["host"],
             "to": m["to"]["host"], "nodename": m["to"]["nodename"]}
            for m in result["moves"]]
    moves = f"{len(rows)} move(s)" if rows else "nothing on the host"
    if result["applied"]:
        said = (f"drain of {result['host']} applied: {moves} claimed, "
                f"host disabled (reason 'draining')")
    else:
        said = (f"drain of {result['host']} planned: {moves}, nothing "
                f"claimed (--apply claims them)")
    if not rows:
        return said
    return table.format_table(rows, MOVE_COLUMNS) + "\n" + said


def render_cancel_drain(result: int) -> str:
    return f"released {result} planned move(s)"


def render_capacity(result: dict[str, Any]) -> str:
    """The total, then one row per zone and per aggregate; with none,
    why."""
    lines = [f"{result['total']} more fit, on {result['hosts']} host(s)"]
    if "why" in result:
        lines.append(result["why"])
    rows = ([{"where": f"zone {z}", "fit": n}
             for z, n in result["by_zone"].items()]
            + [{"where": f"aggregate {a}", "fit": n}
               for a, n in result["by_aggregate"].items()])
    if rows:
        lines += ["", table.format_table(rows, ["where", "fit"])]
    return "\n".join(lines)
