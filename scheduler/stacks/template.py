"""A HOT template (Heat's format) as a ``select_stack`` request.

What is read, as Heat reads it:

- ``heat_template_version`` (required), ``parameters`` with ``default``
  (``--parameter`` values override) and Heat's pseudo parameters
  (``OS::stack_name``, ``OS::stack_id``, ``OS::project_id``),
  ``{get_param: name}`` anywhere; each value typed and held to its
  constraints as Heat does (:mod:`scheduler.stacks.parameters`);
- ``conditions`` (``equals``, ``not``, ``and``, ``or``, ``contains``,
  ``get_param``, a condition's name, true/false) and each resource's
  ``condition``: a resource whose condition is false is not in the stack
  (a ``depends_on`` naming it is dropped, as Heat allows);
  ``{if: [condition, a, b]}`` in properties is ``a`` or ``b``;
- ``resources``: each resource's ``depends_on`` (a name or a list) and
  every ``{get_resource: name}`` and ``{get_attr: [name, ...]}`` in its
  properties are dependencies;
- ``OS::Nova::Server`` is placed: ``flavor`` (a name from the flavors
  file), ``image``, ``availability_zone`` (nova's ``zone:host:node``
  forcing too), ``scheduler_hints``, where
  ``same_host`` / ``different_host`` naming a resource of the template
  by its id (``{get_resource: web1}`` or ``{get_attr: [web1, show,
  id]}``) are relations within the stack (any other get_attr there is
  refused) and ``group`` naming an ``OS::Nova::ServerGroup`` G so puts
  the server in G (its ``policies``, anti-affinity if none, as Heat
  defaults them);
- an ``OS::Heat::ResourceGroup`` whose ``resource_def`` is an
  ``OS::Nova::Server`` is placed as ``count`` (default 1) such servers,
  one resource of that many instances;
- every other type (networks, volumes, load balancers, server groups) is
  ordered, not placed.

Mistakes are ``InvalidRequest`` naming the field
(``resources.web.properties.flavor: unknown flavor 'm1.huge'``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable
import uuid as uuidlib

import yaml

from scheduler import exception
from scheduler.stacks.parameters import parameter_values
from scheduler.stacks.ids import canonical_id
from scheduler.stacks.ids import CONSUMER_NAMESPACE

SERVER = "OS::Nova::Server"
SERVER_GROUP = "OS::Nova::ServerGroup"
RESOURCE_GROUP = "OS::Heat::ResourceGroup"
#: An OS::Nova::ServerGroup's ``policies`` when it gives none (Heat's).
DEFAULT_GROUP_POLICIES = ("anti-affinity",)
RELATIONS = ("same_host", "different_host")
#: A condition's truth: (condition, where it is) -> bool (_conditions).
Truth = Callable[[Any, str], bool]


def load_yaml(path: str | Path, what: str) -> Any:
    """The YAML document at ``path``.
    :raises InvalidRequest: unreadable, not UTF-8 or not YAML, naming
        ``what``."""
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except OSError as e:
        raise exception.InvalidRequest(
            f"{what} {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        # Raised by the file as YAML reads it, so not a YAMLError (its
        # offset is within the chunk read, not the file: not shown).
        raise exception.InvalidRequest(
            f"{what} {path}: not UTF-8 text") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise exception.InvalidRequest(
            f"{what} {path}: not valid YAML{line}") from None


def load_flavors(path: str | Path) -> dict[str, dict[str, Any]]:
    """Flavor name -> flavor fields, from a flavors file.
    :raises InvalidRequest: unreadable, or not a mapping of mappings."""
    doc = load_yaml(path, "flavors file")
    if not isinstance(doc, dict) or not all(
            isinstance(v, dict) for v in doc.values()):
        raise exception.InvalidRequest(
            f"flavors file {path}: expected a mapping of flavor names to "
            f"their fields")
    return {str(name): {"name": str(name), **fields}
            for name, fields in doc.items()}


def stack_id_for(name: str) -> str:
    """The stack id a stack name stands for (same name, same stack)."""
    return str(uuidlib.uuid5(CONSUMER_NAMESPACE, f"stack:{name}"))


def to_stack(template: Any, stack_id: str,
             flavors: dict[str, dict[str, Any]],
             parameters: dict[str, str] | None = None,
             project_id: str | None = None,
             user_id: str | None = None,
             stack_name: str | None = None) -> dict[str, Any]:
    """The ``select_stack`` request for ``template`` (``stack_name``,
    default the id, is Heat's ``OS::stack_name``).
    :raises InvalidRequest: naming the field at fault.
    """
    if not isinstance(template, dict):
        raise exception.InvalidRequest("template: expected a mapping")
    # The server groups' uuids and OS::stack_id derive from it.
    stack_id = canonical_id(stack_id)
    if "heat_template_version" not in template:
        raise exception.InvalidRequest(
            "heat_template_version: missing (not a HOT template?)")
    # Heat's pseudo parameters: templates name their servers with them.
    values = {"OS::stack_name": stack_name or stack_id,
              "OS::stack_id": stack_id, "OS::project_id": project_id,
              **parameter_values(template.get("parameters") or {},
                                 parameters or {})}
    resources = template.get("resources")
    if not isinstance(resources, dict) or not resources:
        raise exception.InvalidRequest(
            "resources: expected a mapping of at least one resource")
    # Heat creates no resource whose condition is false: neither do we
    # place it (get_resource / get_attr of it are then to no such resource;
    # a depends_on naming it is dropped, as Heat allows dependencies on a
    # resource defined under a condition).
    truth = _conditions(template.get("conditions") or {}, values)
    declared = resources
    resources = {name: body for name, body in declared.items()
                 if not isinstance(body, dict) or "condition" not in body
                 or truth(body["condition"], f"resources.{name}.condition")}
    disabled = frozenset(map(str, declared)) - set(map(str, resources))
    types = {}
    for name, body in resources.items():
        if not isinstance(body, dict) or not isinstance(body.get("type"),
                                                        str):
            raise exception.InvalidRequest(
                f"resources.{name}.type: missing")
        types[str(name)] = body["type"]
    groups = {str(name): _server_group(str(name), body, types, values,
                                       stack_id, truth)
              for name, body in resources.items()
              if body["type"] == SERVER_GROUP}
    out = {}
    for name, body in resources.items():
        out[str(name)] = _resource(str(name), body, types, values, flavors,
                                   groups, truth, disabled)
    return {"stack_id": stack_id, "project_id": project_id,
            "user_id": user_id, "resources": out}


_CONDITION_FUNCTIONS = ("equals", "not", "and", "or", "contains",
                        "get_param")


def _conditions(declared: Any, values: dict[str, Any]) -> Truth:
    """The truth of a condition (``condition:`` of a resource, or one of
    ``declared``, the template's ``conditions``), as Heat evaluates it."""
    if not isinstance(declared, dict):
        raise exception.InvalidRequest("conditions: expected a mapping")
    known: dict[str, bool] = {}
    evaluating: set[str] = set()

    def truth(value: Any, where: str) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            # A condition's name.
            if value not in declared:
                raise exception.InvalidRequest(
                    f"{where}: no condition {value!r}")
            if value not in known:
                if value in evaluating:
                    raise exception.InvalidRequest(
                        f"conditions.{value}: refers to itself")
                evaluating.add(value)
                known[value] = truth(declared[value], f"conditions.{value}")
            return known[value]
        if not (isinstance(value, dict) and len(value) == 1
                and next(iter(value)) in _CONDITION_FUNCTIONS):
            raise exception.InvalidRequest(
                f"{where}: expected true, false, a condition's name or one "
                f"of {', '.join(_CONDITION_FUNCTIONS)}, got "
                f"{str(value)[:60]!r}")
        (fn, arg), = value.items()
        if fn == "not":
            return not truth(arg, f"{where}.not")
        if fn in ("and", "or"):
            if not isinstance(arg, list) or len(arg) < 2:
                raise exception.InvalidRequest(
                    f"{where}.{fn}: expected a list of conditions")
            found = [truth(v, f"{where}.{fn}[{i}]")
                     for i, v in enumerate(arg)]
            return all(found) if fn == "and" else any(found)
        resolved = _resolve(value, where, values, {}, set())
        if fn == "get_param":
            if not isinstance(resolved, bool):
                raise exception.InvalidRequest(
                    f"{where}: get_param: expected a boolean, got "
                    f"{str(resolved)[:60]!r}")
            return resolved
        if not isinstance(arg, list) or len(arg) != 2:
            raise exception.InvalidRequest(
                f"{where}.{fn}: expected a list of two values")
        a, b = (_resolve(v, f"{where}.{fn}[{i}]", values, {}, set())
                for i, v in enumerate(arg))
        if fn == "equals":
            return a == b
        if not isinstance(b, list):
            raise exception.InvalidRequest(
                f"{where}.contains: expected a list to look in, got "
                f"{str(b)[:60]!r}")
        return a in b
    return truth


def _resolve(value: Any, where: str, values: dict[str, Any],
             types: dict[str, str], refs: set[str],
             truth: Truth | None = None) -> Any:
    """``value`` with get_param replaced by the parameter's value and
    ``{if: [condition, a, b]}`` by ``a`` or ``b`` (``truth`` judges the
    condition, see :func:`_conditions`); the resources named by
    get_resource and get_attr are collected in ``refs``."""
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn == "if" and truth is not None:
            if not isinstance(arg, list) or len(arg) != 3:
                raise exception.InvalidRequest(
                    f"{where}: if: expected [condition, value if true, "
                    f"value if false], got {str(arg)[:60]!r}")
            # Only the value chosen is resolved: Heat's if references
            # nothing in the branch not taken.
            chosen = arg[1] if truth(arg[0], f"{where}.if[0]") else arg[2]
            return _resolve(chosen, where, values, types, refs, truth)
        if fn == "get_param":
            name = _known(arg[0] if isinstance(arg, list) and arg else arg,
                          values, where, fn, "a parameter name",
                          "no such parameter, or it has no value (no "
                          "default, none given)")
            return _path(values[name], arg[1:] if isinstance(arg, list)
                         else [], f"{where}: get_param {name!r}")
        if fn == "get_resource":
            refs.add(_known(arg, types, where, fn, "a resource name",
                            "no such resource"))
            return {"get_resource": arg}
        if fn == "get_attr":
            # [resource, attribute, ...]: the resource must exist first,
            # as for get_resource (the attribute is left unresolved).
            if not isinstance(arg, list) or not arg:
                raise exception.InvalidRequest(
                    f"{where}: get_attr: expected [resource, attribute, "
                    f"...], got {str(arg)[:60]!r}")
            refs.add(_known(arg[0], types, where, fn, "a resource name "
                            "first", "no such resource"))
            return value
    if isinstance(value, dict):
        return {k: _resolve(v, f"{where}.{k}", values, types, refs, truth)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, f"{where}[{i}]", values, types, refs, truth)
                for i, v in enumerate(value)]
    return value


def _known(name: Any, known: dict[str, Any], where: str, fn: str,
           expected: str, unknown: str) -> str:
    """``name``, the argument of ``fn`` at ``where``, if it is a key of
    ``known``.

    :raises InvalidRequest: ``expected`` if it is not a string, else
        ``unknown``, naming ``fn`` and the name."""
    if not isinstance(name, str):
        raise exception.InvalidRequest(
            f"{where}: {fn}: expected {expected}, got {str(name)[:60]!r}")
    if name not in known:
        raise exception.InvalidRequest(f"{where}: {fn} {name!r}: {unknown}")
    return name


def _path(value: Any, path: list, where: str) -> Any:
    """``value`` followed along ``path`` (map keys, list indexes), as
    Heat's ``{get_param: [name, key, index, ...]}`` does."""
    for step in path:
        if isinstance(value, dict) and isinstance(step, (str, int)) \
                and step in value:
            value = value[step]
        elif isinstance(value, list) and type(step) is int \
                and -len(value) <= step < len(value):
            value = value[step]
        else:
            raise exception.InvalidRequest(
                f"{where}: no {str(step)[:60]!r} in {str(value)[:60]!r}")
    return value


def _server_group(name: str, body: dict, types: dict[str, str],
                  values: dict[str, Any], stack_id: str,
                  truth: Truth | None = None) -> dict[str, Any]:
    """The instance_group of the servers in group resource ``name``: its
    uuid derived from the stack and the name, its policy from
    ``policies`` (or the newer ``policy``); neither is anti-affinity, as
    Heat's ``policies`` default."""
    where = f"resources.{name}.properties"
    props = _mapping(_resolve(body.get("properties") or {}, where, values,
                              types, set(), truth), where)
    policies = props.get("policies")
    if policies is None:
        policies = ([props["policy"]] if props.get("policy") is not None
                    else list(DEFAULT_GROUP_POLICIES))
    if not isinstance(policies, list) or len(policies) != 1:
        raise exception.InvalidRequest(
            f"{where}.policies: expected one policy")
    return {"uuid": str(uuidlib.uuid5(CONSUMER_NAMESPACE,
                                      f"{stack_id}/group/{name}")),
            "policies": policies}


def _resource(name: str, body: dict, types: dict[str, str],
              values: dict[str, Any], flavors: dict[str, dict[str, Any]],
              groups: dict[str, dict[str, Any]],
              truth: Truth | None = None,
              disabled: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Resource ``name`` of the stack; ``disabled``: the template's
    resources whose condition is false (not dependencies)."""
    where = f"resources.{name}"
    depends = body.get("depends_on") or []
    if isinstance(depends, str):
        depends = [depends]
    if not isinstance(depends, list):
        raise exception.InvalidRequest(
            f"{where}.depends_on: expected a resource name or a list")
    refs: set[str] = set()
    props = _mapping(_resolve(body.get("properties") or {},
                              f"{where}.properties", values, types, refs,
                              truth), f"{where}.properties")
    out: dict[str, Any] = {"spec": None,
                           "depends_on": sorted(set(map(str, depends))
                                                - disabled)}
    count = 1
    where = f"{where}.properties"
    if body["type"] == RESOURCE_GROUP:
        # Heat creates ``count`` copies of resource_def: servers are
        # placed as one resource of that many instances.
        count = _count(props.get("count", 1), f"{where}.count")
        definition = _mapping(props.get("resource_def") or {},
                              f"{where}.resource_def")
        if definition.get("type") == SERVER and count:
            where = f"{where}.resource_def.properties"
            props = _mapping(definition.get("properties") or {}, where)
            body = {**body, "type": SERVER}
    if body["type"] != SERVER:
        out["depends_on"] = sorted(set(out["depends_on"]) | refs)
        return out
    hints = dict(_mapping(props.get("scheduler_hints") or {},
                          f"{where}.scheduler_hints"))
    for relation in RELATIONS:
        local, own = _split(hints.pop(relation, None),
                            f"{where}.scheduler_hints.{relation}", types)
        if local:
            out[relation] = local
            refs -= set(local)   # a relation is a dependency already
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
    out["depends_on"] = sorted(set(out["depends_on"]) | refs)
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


def _count(value: Any, where: str) -> int:
    """A ResourceGroup's ``count``: a whole number, 0 or more (text of one
    too, as Heat reads an integer property)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if type(value) is not int or value < 0:
        raise exception.InvalidRequest(
            f"{where}: expected a number of resources (0 or more), got "
            f"{str(value)[:60]}")
    return value


def _mapping(value: Any, where: str) -> dict:
    """``value``, which must be a mapping (else InvalidRequest naming
    ``where``, not a TypeError from whatever reads it)."""
    if not isinstance(value, dict):
        raise exception.InvalidRequest(
            f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _split(value: Any, where: str,
           types: dict[str, str]) -> tuple[list[str], list[Any]]:
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


def _id_of(value: Any, types: dict[str, str]) -> str | None:
    """The resource of the template whose id ``value`` is, as Heat
    resolves it, else None: ``{get_resource: R}`` (R's reference id) and
    ``{get_attr: [R, show, id]}`` of an ``OS::Nova::Server`` or
    ``OS::Nova::ServerGroup`` R.

    No other get_attr of a server gives its id: OS::Nova::Server has no
    ``id`` attribute (Heat refuses ``[R, id]``), and its others are
    addresses, names and consoles. :func:`_resolve` has checked R exists.
    """
    if _is_get_resource(value):
        return value["get_resource"]
    if isinstance(value, dict) and list(value) == ["get_attr"]:
        arg = value["get_attr"]
        if arg[1:] == ["show", "id"] and types[arg[0]] in _SHOWN_BY_NOVA:
            return arg[0]
    return None


def _is_get_resource(value: Any) -> bool:
    """Whether ``value`` is ``{get_resource: name}``: as :func:`_resolve`
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


