"""What ``scheduler-client`` asks: the request spec its flags describe,
the stack request a Heat template describes, and each command's RPC call
(set as the parsed command's ``call``).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scheduler.admin import validation
from scheduler import exception
from scheduler.stacks import files
from scheduler.stacks import nested_files
from scheduler.stacks import template

#: Where the flavors file is looked for without --flavors: the system's
#: configuration, then this checkout's etc/.
FLAVORS_FILES = (Path("/etc/scheduler/flavors.yaml"),
                 Path(__file__).resolve().parents[2] / "etc" / "scheduler"
                 / "flavors.yaml")


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
    """The ``spec`` dict (architecture.rst "The request spec") for the parsed
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


def call_select(api: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    return api.select_destinations({}, build_spec(args))


def call_rank(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    return api.rank_destinations({}, build_spec(args), limit=args.limit)


def call_release(api: Any, args: argparse.Namespace) -> int:
    return api.release({}, list(args.uuids))


def call_confirm(api: Any, args: argparse.Namespace) -> int:
    return api.confirm({}, list(args.uuids))


def flavors_file(args: argparse.Namespace) -> str:
    """``--flavors``, else the first of :data:`FLAVORS_FILES` that exists.
    :raises InvalidRequest: neither."""
    found = args.flavors or next(
        (str(p) for p in FLAVORS_FILES if p.exists()), None)
    if found is None:
        raise exception.InvalidRequest(
            "--flavors: no flavors file given and none found at "
            + " or ".join(str(p) for p in FLAVORS_FILES))
    return found


def stack_request(args: argparse.Namespace) -> dict[str, Any]:
    """The ``select_stack`` request for the ``stack`` command's template,
    with the nested templates it names and the ``--environment`` files
    (and the templates they name), read as python-heatclient reads them
    (:mod:`scheduler.stacks.nested_files`).
    :raises InvalidRequest: the template, an environment, flavors or
        parameters are at fault (naming the field or file)."""
    heat_template, heat_files = nested_files.load_template(args.template)
    environment = nested_files.load_environments(args.environment,
                                                 heat_files)
    return template.to_stack(
        heat_template, stack_id=stack_id(args),
        flavors=files.load_flavors(flavors_file(args)),
        parameters=dict(args.parameter), project_id=args.project_id,
        user_id=args.user_id, stack_name=stack_name(args),
        files=heat_files, environment=environment)


def stack_name(args: argparse.Namespace) -> str:
    """``--name``, else the template's file name without its suffix.

    :raises InvalidRequest: that file name is not UTF-8 text (the stack's
        id is derived from the name's UTF-8), naming it and ``--name``.
    """
    if args.name:
        return args.name
    name = Path(args.template).stem
    validation.check_name(
        "the stack's name (TEMPLATE's file name without --name)", name)
    return name


def stack_id(args: argparse.Namespace) -> str:
    """``--stack-id``, else the id derived from the stack's name."""
    return args.stack_id or template.stack_id_for(stack_name(args))


def call_stack(api: Any, args: argparse.Namespace) -> Any:
    """The stack call; but for a release, with ``args.stack``: the request
    :func:`scheduler.cmd.client.main` read from the files
    (:func:`stack_request`) before connecting."""
    if args.method == "release_stack":
        # The id is all a release needs: the template need not still be
        # readable, nor its parameters given again, nor the flavors found.
        return api.release_stack({}, stack_id(args))
    return getattr(api, args.method)({}, args.stack)


def call_ping(api: Any, args: argparse.Namespace) -> dict[str, str]:
    return api.ping({}, server=args.server)


def call_confirm_move(api: Any, args: argparse.Namespace) -> int:
    return api.confirm_move({}, list(args.uuids))


def call_revert_move(api: Any, args: argparse.Namespace) -> int:
    return api.revert_move({}, list(args.uuids))
