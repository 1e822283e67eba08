"""scheduler-manage: database, host and aggregate administration.

Results are plain tables (``--json``, before or after the command:
machine-readable output of every command); an unknown host or aggregate, a
request that cannot be done or any other operator error is one ``ERROR:
...`` line on stderr and exit status 1 (:mod:`scheduler.errors`).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from scheduler.admin import aggregates
from scheduler.admin import audit
from scheduler.admin import compute_hosts
from scheduler.admin import services
from scheduler.admin import validation
from scheduler.hosts import capacity
from scheduler.service import database
from scheduler.cmd import logs
from scheduler.cmd import parsing
from scheduler.cmd import table
from scheduler import errors
from scheduler import exception
from scheduler import progress
from scheduler.db.engine import create_engine
from scheduler.db import migration
from scheduler.db import retry as db_retry
from scheduler.novadb.databases import NovaDatabases


def _print(args, data: Any, render: Callable[[Any], str]) -> None:
    """``data`` as JSON with ``--json`` (which escapes every control
    character), else ``render(data)`` with the control characters of its
    lines escaped: names read from the database or echoed from the
    command line are shown, never let steer the terminal."""
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        print("\n".join(validation.escape(line)
                        for line in render(data).split("\n")))


def _write(conf, func: Callable, *args, **kwargs):
    """Run an admin write (one transaction), retrying transient database
    errors ``[scheduler] db_retries`` times like the service does, but not
    waiting out an unreachable database (``db_outage_timeout``): an
    operator at a terminal gets the one line at once and runs it again."""
    return db_retry.retrying(conf.scheduler.db_retries)(func)(*args,
                                                             **kwargs)


def _metadata(metadata: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(metadata.items()))


def db_sync(conf, engine, args) -> None:
    current = migration.version(engine)
    if current is not None and not migration.known(current):
        # Upgraded by a newer release: nothing to do here but say so, as
        # 'db version' and the upgrade check do.
        raise exception.ConfigError(
            migration.problem(current, errors.database_name(conf)))
    on_step = None
    if progress.wanted(args.progress):
        def on_step(revision: str, applied: int, total: int) -> None:
            print(f"db sync: applied {revision} ({applied}/{total})",
                  file=sys.stderr, flush=True)
    migration.upgrade(engine, on_step=on_step)
    revision = migration.version(engine)
    _print(args, {"revision": revision},
           lambda _: f"database at revision {revision}")


def db_version(conf, engine, args) -> int:
    """The schema revision; exit 1 unless it is this code's head (none,
    behind or unknown: :func:`migration.problem`'s line on stderr), so a
    pre-start check (the unit's ExecStartPre) fails before the service
    does."""
    revision = migration.version(engine)
    _print(args, {"revision": revision},
           lambda _: revision or "none (run 'scheduler-manage db sync')")
    if revision is None:
        return 1
    problem = migration.problem(revision, errors.database_name(conf))
    if problem:
        print(f"ERROR: {problem}", file=sys.stderr)
        return 1
    return 0


def service_list(conf, engine, args) -> None:
    rows = services.list_services(engine)
    down = conf.scheduler.service_down_time
    for r in rows:
        r["state"] = services.service_state(r["forced_down"],
                                            r["heartbeat_age"], down)
        r["status"] = "disabled" if r["disabled"] else "enabled"
    _print(args, rows, lambda rows: table.format_table(
        rows, ["host", "binary", "status", "state", "disabled_reason"]))


def service_disable(conf, engine, args) -> None:
    _write(conf, services.set_service_disabled, engine, args.host, True,
           args.reason)
    _print(args, {"host": args.host, "disabled": True,
                  "reason": args.reason},
           lambda _: f"disabled {args.host}")


def service_enable(conf, engine, args) -> None:
    _write(conf, services.set_service_disabled, engine, args.host, False)
    _print(args, {"host": args.host, "disabled": False},
           lambda _: f"enabled {args.host}")


def node_list(conf, engine, args) -> None:
    _print(args, compute_hosts.list_nodes(engine),
           lambda rows: table.format_table(
               rows,
               ["host", "hypervisor_hostname", "vcpus", "vcpus_used",
                "memory_mb", "memory_mb_used", "local_gb", "local_gb_used",
                "cpu_allocation_ratio", "ram_allocation_ratio"]))


def host_list(conf, engine, args) -> None:
    hosts = compute_hosts.list_compute_hosts(
        engine, conf.scheduler.service_down_time,
        conf.filter_scheduler.default_availability_zone)
    _print(args, hosts, lambda hosts: table.format_table(
        [dict(h, zones=", ".join(h["zones"])) for h in hosts],
        ["host", "status", "state", "nodes", "zones"]))


def render_host(host: dict) -> str:
    """``host describe`` as text: the host's fields, its aggregates, then
    per node its resources and its usage per project. The names and the
    reason from the database are escaped, newlines included (the tables
    escape their cells)."""
    shown = validation.escape
    status = host["status"]
    if host["disabled_reason"]:
        status += f" ({shown(host['disabled_reason'])})"
    lines = [f"host:   {shown(host['host'])}", f"status: {status}",
             f"state:  {host['state']}",
             f"zones:  {shown(', '.join(host['zones']))}", "",
             "aggregates:"]
    if host["aggregates"]:
        lines.append(table.format_table(
            [dict(a, metadata=_metadata(a["metadata"]))
             for a in host["aggregates"]], ["name", "metadata"]))
    else:
        lines.append("(none)")
    if not host["nodes"]:
        lines += ["", "nodes: (none)"]
    for node in host["nodes"]:
        lines += ["", f"node {shown(node['node'])}:", table.format_table(
            node["resources"],
            ["resource", "total", "ratio", "capacity", "used"]),
            "", f"usage by project on {shown(node['node'])}:"]
        if node["projects"]:
            lines.append(table.format_table(
                [dict(p, project_id=p["project_id"] or "(none)")
                 for p in node["projects"]],
                ["project_id", "instances", "moving", "vcpus", "memory_mb",
                 "disk_gb"]))
        else:
            lines.append("(no allocations)")
    return "\n".join(lines)


def host_describe(conf, engine, args) -> None:
    fs = conf.filter_scheduler
    host = compute_hosts.describe_host(
        engine, args.host,
        service_down_time=conf.scheduler.service_down_time,
        default_zone=fs.default_availability_zone,
        default_ratios=capacity.Ratios.from_conf(conf),
        enabled_filters=fs.enabled_filters)
    _print(args, host, render_host)


def aggregate_list(conf, engine, args) -> None:
    _print(args, aggregates.list_aggregates(engine),
           lambda rows: table.format_table(
               [dict(a, hosts=len(a["hosts"]),
                     metadata=_metadata(a["metadata"])) for a in rows],
               ["name", "hosts", "metadata"]))


def aggregate_create(conf, engine, args) -> None:
    _write(conf, aggregates.create_aggregate, engine, args.name, args.zone)
    zone = f" in zone {args.zone}" if args.zone is not None else ""
    _print(args, {"name": args.name, "zone": args.zone},
           lambda _: f"created aggregate {args.name}{zone}")


def aggregate_delete(conf, engine, args) -> None:
    hosts = _write(conf, aggregates.delete_aggregate, engine, args.name,
                   force=args.force)
    removed = f" (removed {len(hosts)} host(s))" if hosts else ""
    _print(args, {"name": args.name, "removed_hosts": list(hosts or [])},
           lambda _: f"deleted aggregate {args.name}{removed}")


def aggregate_add_host(conf, engine, args) -> None:
    _write(conf, aggregates.add_aggregate_host, engine, args.name, args.host)
    _print(args, {"name": args.name, "added": args.host},
           lambda _: f"added {args.host} to aggregate {args.name}")


def aggregate_remove_host(conf, engine, args) -> None:
    _write(conf, aggregates.remove_aggregate_host, engine, args.name,
           args.host)
    _print(args, {"name": args.name, "removed": args.host},
           lambda _: f"removed {args.host} from aggregate {args.name}")


def aggregate_set_metadata(conf, engine, args) -> None:
    metadata = _write(conf, aggregates.set_aggregate_metadata, engine,
                      args.name, dict(args.metadata))
    _print(args, {"name": args.name, "metadata": metadata},
           lambda _: f"aggregate {args.name} metadata: "
                     f"{_metadata(metadata)}")


def allocations_audit(conf, engine, args) -> int:
    fs = conf.filter_scheduler
    show = progress.wanted(args.progress)
    reports = None
    if conf.nova.api_database_connection:
        # Against what nova's computes report, as the server counts.
        databases = NovaDatabases(conf)
        try:
            reports = databases.read_reports()
        finally:
            databases.close()
    problems = audit.audit_allocations(
        engine, capacity.Ratios.from_conf(conf), fs.enabled_filters,
        progress=lambda total: progress.reporter("audit: checked nodes",
                                                 total, show),
        reports=reports)
    fixed = (_write(conf, audit.fix_usage, engine, reports)
             if problems and args.fix else None)
    books = ("nova's reports plus the claims they do not hold"
             if reports is not None else "allocations")
    if args.json:
        _print(args, {"problems": problems, "fixed_nodes": fixed}, str)
    elif not problems:
        print(f"audit: usage equals {books} on every node; no node is "
              f"over capacity")
    else:
        print(table.format_table(problems, ["host", "node", "resource",
                                            "problem", "used", "allocated",
                                            "capacity"]))
        if fixed is not None:
            print(f"audit: recomputed usage from {books} on {fixed} "
                  f"node(s)")
    if not problems:
        return 0
    if args.fix:
        # Over-capacity and claims on a deleted node cannot be fixed by
        # recomputing; they stay errors.
        return int(any(p["problem"] in ("over capacity",
                                        audit.ON_DELETED_NODE)
                       for p in problems))
    return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scheduler-manage")
    parsing.add_config_args(parser)
    parser.add_argument("--debug", action="store_true",
                        help="debug logging; tracebacks of unexpected "
                             "errors")
    groups = parser.add_subparsers(dest="group", required=True)

    dbp = groups.add_parser("db", help="schema").add_subparsers(
        dest="action", required=True)
    dbp.add_parser("sync", help="create or upgrade the schema"
                   ).set_defaults(func=db_sync)
    dbp.add_parser("version", help="print the schema revision"
                   ).set_defaults(func=db_version)

    svc = groups.add_parser("service", help="compute services"
                            ).add_subparsers(dest="action", required=True)
    svc.add_parser("list").set_defaults(func=service_list)
    p = svc.add_parser("disable", help="stop scheduling to a host")
    p.add_argument("host")
    p.add_argument("--reason", default=None)
    p.set_defaults(func=service_disable)
    p = svc.add_parser("enable", help="schedule to a host again")
    p.add_argument("host")
    p.set_defaults(func=service_enable)

    node = groups.add_parser("node", help="compute nodes").add_subparsers(
        dest="action", required=True)
    node.add_parser("list").set_defaults(func=node_list)

    host = groups.add_parser("host", help="compute hosts").add_subparsers(
        dest="action", required=True)
    host.add_parser("list", help="status, state, nodes and zones of every "
                    "compute host").set_defaults(func=host_list)
    p = host.add_parser("describe", help="capacity, usage per project and "
                        "aggregates of one host")
    p.add_argument("host")
    p.set_defaults(func=host_describe)

    agg = groups.add_parser("aggregate", help="host aggregates and "
                            "availability zones").add_subparsers(
        dest="action", required=True)
    agg.add_parser("list", help="aggregates with their host count and "
                   "metadata").set_defaults(func=aggregate_list)
    p = agg.add_parser("create", help="create an aggregate")
    p.add_argument("name")
    p.add_argument("--zone", default=None, metavar="AZ",
                   help="its availability zone (metadata "
                   "availability_zone)")
    p.set_defaults(func=aggregate_create)
    p = agg.add_parser("delete", help="delete an aggregate (refused while "
                       "it has hosts, unless --force)")
    p.add_argument("name")
    p.add_argument("--force", action="store_true",
                   help="delete it even if it still has hosts")
    p.set_defaults(func=aggregate_delete)
    p = agg.add_parser("add-host", help="put a compute host in an "
                       "aggregate")
    p.add_argument("name")
    p.add_argument("host")
    p.set_defaults(func=aggregate_add_host)
    p = agg.add_parser("remove-host", help="take a host out of an "
                       "aggregate")
    p.add_argument("name")
    p.add_argument("host")
    p.set_defaults(func=aggregate_remove_host)
    p = agg.add_parser("set-metadata", help="set metadata keys (key= "
                       "removes the key)")
    p.add_argument("name")
    p.add_argument("metadata", nargs="+", type=parsing.key_value,
                   metavar="key=value")
    p.set_defaults(func=aggregate_set_metadata)

    allocs = groups.add_parser("allocations", help="claims").add_subparsers(
        dest="action", required=True)
    p = allocs.add_parser("audit", help="check usage against allocations "
                          "and capacity (exit 1 if something is off)")
    p.add_argument("--fix", action="store_true",
                   help="recompute usage from allocations")
    p.set_defaults(func=allocations_audit)
    # Last, so every command above gets it.
    parsing.add_to_every_command(parser, "--json", action="store_true",
                                 default=False,
                                 help="print the result as JSON")
    parsing.add_to_every_command(parser, progress.FLAG, **progress.OPTION)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command: 0, or 1 after one ``ERROR:`` line on stderr."""
    args = build_parser().parse_args(argv)
    loaded: list = []

    def body() -> int:
        conf = parsing.conf_from_args(args)
        loaded.append(conf)
        logs.setup_logging(conf, args.debug, "scheduler-manage")
        database.check_database(conf, create=args.func is db_sync,
                                config_given=bool(args.config_file
                                                  or args.config_dir))
        engine = create_engine(conf)
        try:
            if args.group != "db":
                database.require_schema(conf, engine)
            return args.func(conf, engine, args) or 0
        finally:
            engine.dispose()

    return errors.run(body, debug=args.debug,
                      conf=lambda: loaded[0] if loaded else None)


if __name__ == "__main__":
    sys.exit(main())
