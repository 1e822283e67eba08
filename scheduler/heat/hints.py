"""The scheduler hints Heat gives each server it boots
(``stack_scheduler_hints``), and the resource of a placed stack they name.

Heat names a server by its root stack's id, the path of stacks from the
root (``heat_path_in_stack``: the root stack's name, then for each nested
stack ``"<parent resource name>,<stack name>"``) and its resource name. A
placed stack names its resources by the Heat resource names from the root
joined with ``/`` (``app/web``, ``tier/0/web``; Heat allows no ``/`` in a
name): the members of a ResourceGroup of servers are the instances of the
group's one resource, by index (``grp`` member ``"3"`` is index 3).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from scheduler.request.names import canonical_uuid
from scheduler.request.names import is_uuid

ROOT_STACK_ID = "heat_root_stack_id"
PATH_IN_STACK = "heat_path_in_stack"
RESOURCE_NAME = "heat_resource_name"


@dataclasses.dataclass(frozen=True)
class HeatServer:
    """Which server of which Heat stack a boot is."""
    root_stack_id: str
    #: The Heat resource names from the root stack to the server's own.
    path: tuple[str, ...]

    @property
    def key(self) -> str:
        return "/".join(self.path)


def heat_server(hints: Mapping[str, Any]) -> HeatServer | None:
    """The Heat server a boot's scheduler ``hints`` name, or None when they
    name none (not Heat's, or not all of root stack, path and resource).
    Nova gives each hint as a list of strings; the 1.x API may give a
    string."""
    root = _one(hints.get(ROOT_STACK_ID))
    name = _one(hints.get(RESOURCE_NAME))
    path = hints.get(PATH_IN_STACK)
    if isinstance(path, str):
        path = [path]
    if not (root and is_uuid(root) and name and isinstance(path, list)
            and path and all(isinstance(p, str) for p in path)):
        return None
    parents: list[str] = []
    stack_name = path[0]
    for entry in path[1:]:
        parent, stack_name = _parent(entry, stack_name)
        if not parent:
            return None
        parents.append(parent)
    return HeatServer(canonical_uuid(root, ROOT_STACK_ID),
                      (*parents, name))


def _parent(entry: str, above: str) -> tuple[str, str]:
    """A nested stack's ``"<parent resource name>,<stack name>"`` in the
    stack named ``above``: the resource's name and the stack's.

    Heat names a nested stack ``<above>-<resource>-<id>``; a resource name
    may hold a comma, so the comma is the one that makes the two agree.
    A name Heat shortened does not: then the first comma (Heat's own
    stack names have none)."""
    at = entry.find(",")
    while at != -1:
        resource, stack_name = entry[:at], entry[at + 1:]
        if stack_name.startswith(f"{above}-{resource}-"):
            return resource, stack_name
        at = entry.find(",", at + 1)
    resource, comma, stack_name = entry.partition(",")
    return (resource, stack_name) if comma else ("", "")


def _one(value: Any) -> str | None:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, str) and value else None


def instance_of(server: HeatServer, resources: Mapping[str, Any]
                ) -> tuple[str, int] | None:
    """The resource of a placed stack (``resources``: name -> its spec's
    instance count) that ``server`` is, and its index: ``(name, 0)`` for a
    server of its own, ``(group, i)`` for member ``i`` of a ResourceGroup
    of servers; None if the stack has no such server."""
    if resources.get(server.key, 0) == 1:
        return server.key, 0
    *parent, member = server.path
    group = "/".join(parent)
    if parent and member.isdigit() and int(member) < resources.get(group, 0):
        return group, int(member)
    return None
