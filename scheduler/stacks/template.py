"""A HOT template (Heat's format) as a ``select_stack`` request.

What is read, as Heat reads it:

- ``heat_template_version`` (required), ``parameters`` with ``default``
  (``--parameter`` values override) and Heat's pseudo parameters
  (``OS::stack_name``, ``OS::stack_id``, ``OS::project_id``),
  ``{get_param: name}`` anywhere;
- ``resources``: each resource's ``depends_on`` (a name or a list) and
  every ``{get_resource: name}`` and ``{get_attr: [name, ...]}`` in its
  properties are dependencies;
- ``OS::Nova::Server`` is placed: ``flavor`` (a name from the flavors
  file), ``image``, ``availability_zone``, ``scheduler_hints``, where
  ``same_host`` / ``different_host`` naming a resource of the template
  (``{get_resource: web1}``) are relations within the stack and
  ``group: {get_resource: G}`` puts the server in the
  ``OS::Nova::ServerGroup`` G (its ``policies``);
- every other type (networks, volumes, load balancers, server groups) is
  ordered, not placed.

Mistakes are ``InvalidRequest`` naming the field
(``resources.web.properties.flavor: unknown flavor 'm1.huge'``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
import uuid as uuidlib

import yaml

from scheduler import exception
from scheduler.stacks.stack import CONSUMER_NAMESPACE

SERVER = "OS::Nova::Server"
SERVER_GROUP = "OS::Nova::ServerGroup"
RELATIONS = ("same_host", "different_host")


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
    if "heat_template_version" not in template:
        raise exception.InvalidRequest(
            "heat_template_version: missing (not a HOT template?)")
    # Heat's pseudo parameters: templates name their servers with them.
    values = {"OS::stack_name": stack_name or stack_id,
              "OS::stack_id": stack_id, "OS::project_id": project_id,
              **_parameters(template.get("parameters") or {},
                            parameters or {})}
    resources = template.get("resources")
    if not isinstance(resources, dict) or not resources:
        raise exception.InvalidRequest(
            "resources: expected a mapping of at least one resource")
    types = {}
    for name, body in resources.items():
        if not isinstance(body, dict) or not isinstance(body.get("type"),
                                                        str):
            raise exception.InvalidRequest(
                f"resources.{name}.type: missing")
        types[str(name)] = body["type"]
    groups = {str(name): _server_group(str(name), body, types, values,
                                       stack_id)
              for name, body in resources.items()
              if body["type"] == SERVER_GROUP}
    out = {}
    for name, body in resources.items():
        out[str(name)] = _resource(str(name), body, types, values, flavors,
                                   groups)
    return {"stack_id": stack_id, "project_id": project_id,
            "user_id": user_id, "resources": out}


def _parameters(declared: Any, given: dict[str, str]) -> dict[str, Any]:
    if not isinstance(declared, dict):
        raise exception.InvalidRequest("parameters: expected a mapping")
    for name in given:
        if name not in declared:
            raise exception.InvalidRequest(
                f"parameters.{name}: not a parameter of the template")
    values = {}
    for name, decl in declared.items():
        if name in given:
            values[name] = given[name]
        elif isinstance(decl, dict) and "default" in decl:
            values[name] = decl["default"]
    return values


def _resolve(value: Any, where: str, values: dict[str, Any],
             types: dict[str, str], refs: set[str]) -> Any:
    """``value`` with get_param replaced by the parameter's value; the
    resources named by get_resource and get_attr are collected in
    ``refs``."""
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
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
        return {k: _resolve(v, f"{where}.{k}", values, types, refs)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, f"{where}[{i}]", values, types, refs)
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
                  values: dict[str, Any], stack_id: str) -> dict[str, Any]:
    """The instance_group of the servers in group resource ``name``: its
    uuid derived from the stack and the name, its policy from
    ``policies`` (or the newer ``policy``)."""
    where = f"resources.{name}.properties"
    props = _mapping(_resolve(body.get("properties") or {}, where, values,
                              types, set()), where)
    policies = props.get("policies")
    if policies is None and props.get("policy") is not None:
        policies = [props["policy"]]
    if not isinstance(policies, list) or len(policies) != 1:
        raise exception.InvalidRequest(
            f"{where}.policies: expected one policy")
    return {"uuid": str(uuidlib.uuid5(CONSUMER_NAMESPACE,
                                      f"{stack_id}/group/{name}")),
            "policies": policies}


def _resource(name: str, body: dict, types: dict[str, str],
              values: dict[str, Any], flavors: dict[str, dict[str, Any]],
              groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    where = f"resources.{name}"
    depends = body.get("depends_on") or []
    if isinstance(depends, str):
        depends = [depends]
    if not isinstance(depends, list):
        raise exception.InvalidRequest(
            f"{where}.depends_on: expected a resource name or a list")
    refs: set[str] = set()
    props = _mapping(_resolve(body.get("properties") or {},
                              f"{where}.properties", values, types, refs),
                     f"{where}.properties")
    out: dict[str, Any] = {"spec": None,
                           "depends_on": sorted(set(map(str, depends)))}
    if body["type"] != SERVER:
        out["depends_on"] = sorted(set(out["depends_on"]) | refs)
        return out
    hints = dict(_mapping(props.get("scheduler_hints") or {},
                          f"{where}.properties.scheduler_hints"))
    for relation in RELATIONS:
        local, own = _split(hints.pop(relation, None),
                            f"{where}.properties.scheduler_hints.{relation}")
        if local:
            out[relation] = local
            refs -= set(local)   # a relation is a dependency already
        if own:
            hints[relation] = own
    spec: dict[str, Any] = {
        "num_instances": 1,
        "flavor": _flavor(props.get("flavor"), flavors,
                          f"{where}.properties.flavor"),
    }
    image = props.get("image")
    if image is not None:
        spec["image"] = {"name": str(image)}
    if props.get("availability_zone") is not None:
        spec["availability_zone"] = props["availability_zone"]
    group = hints.pop("group", None)
    if isinstance(group, dict) and "get_resource" in group:
        if group["get_resource"] not in groups:
            raise exception.InvalidRequest(
                f"{where}.properties.scheduler_hints.group: "
                f"{group['get_resource']!r} is not an {SERVER_GROUP}")
        spec["instance_group"] = dict(groups[group["get_resource"]])
    elif group is not None:
        hints["group"] = group
    if hints:
        spec["scheduler_hints"] = hints
    out["spec"] = spec
    out["depends_on"] = sorted(set(out["depends_on"]) | refs)
    return out


def _mapping(value: Any, where: str) -> dict:
    """``value``, which must be a mapping (else InvalidRequest naming
    ``where``, not a TypeError from whatever reads it)."""
    if not isinstance(value, dict):
        raise exception.InvalidRequest(
            f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _split(value: Any, where: str) -> tuple[list[str], list[Any]]:
    """A same_host/different_host hint: resources of the template (from
    get_resource), and anything else (instance uuids, kept as the spec's
    own hint)."""
    if value is None:
        return [], []
    items = value if isinstance(value, list) else [value]
    local = [v["get_resource"] for v in items
             if isinstance(v, dict) and "get_resource" in v]
    own = [v for v in items if not (isinstance(v, dict)
                                    and "get_resource" in v)]
    return local, own


def _flavor(value: Any, flavors: dict[str, dict[str, Any]],
            where: str) -> dict[str, Any]:
    if not isinstance(value, str):
        raise exception.InvalidRequest(f"{where}: expected a flavor name")
    if value not in flavors:
        raise exception.InvalidRequest(
            f"{where}: unknown flavor {value!r} (known: "
            f"{', '.join(sorted(flavors))})")
    return dict(flavors[value])


