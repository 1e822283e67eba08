"""scheduler-manage: database and host administration."""
from __future__ import annotations

import argparse
import sys

from scheduler import admin
from scheduler import cmd
from scheduler import exception
from scheduler.db import api as db
from scheduler.db import migration


def db_sync(conf, engine, args) -> None:
    migration.upgrade(engine)
    print(f"database at revision {migration.version(engine)}")


def db_version(conf, engine, args) -> None:
    print(migration.version(engine) or "none (run 'db sync')")


def service_list(conf, engine, args) -> None:
    rows = admin.list_services(engine)
    down = conf.scheduler.service_down_time
    for r in rows:
        age = r["heartbeat_age"]
        r["state"] = "down" if (r["forced_down"] or age is None
                                or age > down) else "up"
        r["status"] = "disabled" if r["disabled"] else "enabled"
    print(cmd.format_table(rows, ["host", "binary", "status", "state",
                                  "disabled_reason"]))


def service_disable(conf, engine, args) -> None:
    admin.set_service_disabled(engine, args.host, True, args.reason)
    print(f"disabled {args.host}")


def service_enable(conf, engine, args) -> None:
    admin.set_service_disabled(engine, args.host, False)
    print(f"enabled {args.host}")


def node_list(conf, engine, args) -> None:
    print(cmd.format_table(
        admin.list_nodes(engine),
        ["host", "hypervisor_hostname", "vcpus", "vcpus_used", "memory_mb",
         "memory_mb_used", "local_gb", "local_gb_used",
         "cpu_allocation_ratio", "ram_allocation_ratio"]))


def allocations_audit(conf, engine, args) -> int:
    fs = conf.filter_scheduler
    problems = admin.audit_allocations(engine, fs.cpu_allocation_ratio,
                                       fs.ram_allocation_ratio,
                                       fs.disk_allocation_ratio)
    if not problems:
        print("audit: usage equals allocations on every node; no node is "
              "over capacity")
        return 0
    print(cmd.format_table(problems, ["host", "node", "resource", "problem",
                                      "used", "allocated", "capacity"]))
    if args.fix:
        fixed = admin.fix_usage(engine)
        print(f"audit: recomputed usage from allocations on {fixed} node(s)")
        # Over-capacity cannot be fixed by recomputing; it stays an error.
        return int(any(p["problem"] == "over capacity" for p in problems))
    return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scheduler-manage")
    cmd.add_config_args(parser)
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
    allocs = groups.add_parser("allocations", help="claims").add_subparsers(
        dest="action", required=True)
    p = allocs.add_parser("audit", help="check usage against allocations "
                          "and capacity (exit 1 if something is off)")
    p.add_argument("--fix", action="store_true",
                   help="recompute usage from allocations")
    p.set_defaults(func=allocations_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    conf = cmd.conf_from_args(args)
    engine = db.create_engine(conf)
    try:
        return args.func(conf, engine, args) or 0
    except exception.SchedulerException as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
