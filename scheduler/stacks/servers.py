"""An ``OS::Nova::Server`` of a template as what the request places: its
spec (``flavor`` by name or id, ``image``, ``availability_zone`` with
nova's host forcing, ``scheduler_hints``), its ``same_host`` /
``different_host`` relations to servers of the stack, and the server
group its ``group`` hint names.

Which values name a resource's id (:func:`_id_of`) is decided here too:
only those are relations within the stack.
"""
from __future__ import annotations

from typing import Any, Mapping
import uuid as uuidlib

from scheduler import exception
from scheduler.stacks.functions import mapping
from scheduler.stacks.functions import resolve
from scheduler.stacks.functions import Truth
from scheduler.stacks.ids import CONSUMER_NAMESPACE
from scheduler.stacks.limits import Budget

SERVER = "OS::Nova::Server"
SERVER_GROUP = "OS::Nova::ServerGroup"
#: An OS::Nova::ServerGroup's ``policies`` when it gives none (Heat's).
DEFAULT_GROUP_POLICIES = ("anti-affinity",)
RELATIONS = ("same_host", "different_host")


def server_group(name: str, body: dict, types: dict[str, str],
                 values: dict[str, Any], stack_id: str,
                 truth: Truth | None = None,
                 budget: Budget | None = None,
                 path: str | None = None) -> dict[str, Any]:
    """The instance_group of the servers in group resource ``name``: its
    uuid derived from the stack and the group's ``path`` (its name from
    the root, ``app/group`` in nested template resource ``app``; default
    ``name``), its policy from ``policies`` (or the newer ``policy``);
    neither is anti-affinity, as Heat's ``policies`` default. Its
    properties are resolved within ``budget`` (the template's).
    :raises InvalidRequest: naming the property at fault."""
    where = f"resources.{name}.properties"
    props = mapping(resolve(body.get("properties") or {}, where, values,
                            types, set(), truth, budget), where)
    policies = props.get("policies")
    if policies is None:
        policies = ([props["policy"]] if props.get("policy") is not None
                    else list(DEFAULT_GROUP_POLICIES))
    if not isinstance(policies, list) or len(policies) != 1:
        raise exception.InvalidRequest(
            f"{where}.policies: expected one policy")
    return {"uuid": str(uuidlib.uuid5(CONSUMER_NAMESPACE,
                                      f"{stack_id}/group/{path or name}")),
            "policies": policies}


def placement(props: dict, count: int, where: str,
              types: Mapping[str, str],
              flavors: dict[str, dict[str, Any]],
              groups: Mapping[str, dict[str, Any]],
              refs: set[str]) -> dict[str, Any]:
    """What the request places for a server of ``count`` instances whose
    properties, at ``where``, are ``props``: its ``spec`` and its
    ``same_host`` / ``different_host`` relations to servers of the stack.
    The resources those relations name are taken out of ``refs`` (the
    resources it depends on): a relation is a dependency already.
    ``types`` and ``groups`` are by the names the properties give: the
    template's own, and those of other templates a nested template is
    passed (:func:`scheduler.stacks.nested.outer_references`)."""
    out: dict[str, Any] = {}
    hints = dict(mapping(props.get("scheduler_hints") or {},
                         f"{where}.scheduler_hints"))
    for relation in RELATIONS:
        local, own = _split(hints.pop(relation, None),
                            f"{where}.scheduler_hints.{relation}", types)
        if local:
            out[relation] = local
            refs.difference_update(local)
        if own:
            hints[relation] = own
    spec: dict[str, Any] = {
        "num_instances": count,
        "flavor": _flavor(props.get("flavor"), flavors, f"{where}.flavor"),
    }
    image = props.get("image")
    if image is not None:
        spec["image"] = {"name": str(image)}
    if props.get("availability_zone") is not None:
        spec.update(_zone(props["availability_zone"],
                          f"{where}.availability_zone"))
    group = hints.pop("group", None)
    named = _id_of(group, types)
    if named is not None:
        if named not in groups:
            raise exception.InvalidRequest(
                f"{where}.scheduler_hints.group: "
                f"{named!r} is not an {SERVER_GROUP}")
        spec["instance_group"] = dict(groups[named])
    elif group is not None:
        hints["group"] = group
    if hints:
        spec["scheduler_hints"] = hints
    out["spec"] = spec
    return out


def _zone(value: Any, where: str) -> dict[str, Any]:
    """A server's ``availability_zone`` as nova's API reads it (Heat
    passes it on): an admin's ``zone:host``, ``zone:host:node`` or
    ``zone::node`` forces the host or node, in that zone if one is named.
    :returns: the spec's ``availability_zone``, ``force_hosts`` and
        ``force_nodes`` it gives."""
    if not isinstance(value, str) or ":" not in value:
        return {"availability_zone": value}   # the spec's schema checks it
    parts = value.split(":")
    if len(parts) > 3:
        raise exception.InvalidRequest(
            f"{where}: expected zone, zone:host, zone:host:node or "
            f"zone::node, got {value[:60]!r}")
    zone, host, node = parts + [""] * (3 - len(parts))
    out: dict[str, Any] = {}
    if zone:
        out["availability_zone"] = zone
    if host:
        out["force_hosts"] = [host]
    if node:
        out["force_nodes"] = [node]
    return out


def _split(value: Any, where: str,
           types: Mapping[str, str]) -> tuple[list[str], list[Any]]:
    """A same_host/different_host hint: the resources of the template it
    names by their id (:func:`_id_of`), and anything else (instance
    uuids, kept as the spec's own hint).

    :raises InvalidRequest: a ``get_attr`` that does not give a server's
        id (an address, a name): nova would be handed no instance uuid.
    """
    if value is None:
        return [], []
    local, own = [], []
    for v in value if isinstance(value, list) else [value]:
        name = _id_of(v, types)
        if name is not None:
            local.append(name)
        elif isinstance(v, dict) and list(v) == ["get_attr"]:
            raise exception.InvalidRequest(
                f"{where}: get_attr {str(v['get_attr'])[:60]} is not a "
                f"server's id (name a server of the stack with "
                f"{{get_resource: NAME}} or {{get_attr: [NAME, show, id]}})")
        else:
            own.append(v)
    return local, own


#: The types whose Heat ``show`` attribute is nova's own record of the
#: resource (Heat's ``entity`` "servers", "server_groups"), so that its
#: ``id`` is the resource's id, what get_resource gives.
_SHOWN_BY_NOVA = (SERVER, SERVER_GROUP)


def _id_of(value: Any, types: Mapping[str, str]) -> str | None:
    """The resource of the template whose id ``value`` is, as Heat
    resolves it, else None: ``{get_resource: R}`` (R's reference id) and
    ``{get_attr: [R, show, id]}`` of an ``OS::Nova::Server`` or
    ``OS::Nova::ServerGroup`` R.

    No other get_attr of a server gives its id: OS::Nova::Server has no
    ``id`` attribute (Heat refuses ``[R, id]``), and its others are
    addresses, names and consoles. :func:`resolve` has checked that R
    exists where the template names it; one a parameter's value names
    (JSON given as such) need not: it is no server of ``types``.
    """
    if _is_get_resource(value):
        return value["get_resource"]
    if isinstance(value, dict) and list(value) == ["get_attr"]:
        arg = value["get_attr"]
        if isinstance(arg, list) and arg[1:] == ["show", "id"] \
                and isinstance(arg[0], str) \
                and types.get(arg[0]) in _SHOWN_BY_NOVA:
            return arg[0]
    return None


def _is_get_resource(value: Any) -> bool:
    """Whether ``value`` is ``{get_resource: name}``: as :func:`resolve`
    reads functions, the one key of its mapping (which checked the name);
    a mapping with more keys is a value like any other."""
    return isinstance(value, dict) and list(value) == ["get_resource"]


def _flavor(value: Any, flavors: dict[str, dict[str, Any]],
            where: str) -> dict[str, Any]:
    """The flavor ``value`` names: its name or, as Heat takes it too, its
    ``flavorid`` (a number in YAML is that id)."""
    if type(value) is int:
        value = str(value)
    if not isinstance(value, str):
        raise exception.InvalidRequest(
            f"{where}: expected a flavor name or id")
    if value in flavors:
        return dict(flavors[value])
    by_id = [f for f in flavors.values() if f.get("flavorid") is not None
             and str(f["flavorid"]) == value]
    if len(by_id) > 1:
        raise exception.InvalidRequest(
            f"{where}: flavor id {value!r} is the id of "
            f"{', '.join(sorted(f['name'] for f in by_id))}")
    if not by_id:
        raise exception.InvalidRequest(
            f"{where}: unknown flavor {value!r} (known: "
            f"{', '.join(sorted(flavors))})")
    return dict(by_id[0])
