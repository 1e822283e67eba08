"""A HOT template (Heat's format) as a ``select_stack`` request.

What is read, as Heat reads it:

- ``heat_template_version`` (required), ``parameters`` with ``default``
  (``--parameter`` values override) and Heat's pseudo parameters
  (``OS::stack_name``, ``OS::stack_id``, ``OS::project_id``),
  ``{get_param: name}`` anywhere (:mod:`scheduler.stacks.functions`);
  each value typed and held to its constraints as Heat does
  (:mod:`scheduler.stacks.parameters`);
- ``conditions`` (``equals``, ``not``, ``and``, ``or``, ``contains``,
  ``get_param``, a condition's name, true/false;
  :mod:`scheduler.stacks.conditions`) and each resource's
  ``condition``: a resource whose condition is false is not in the stack
  (a ``depends_on`` naming it is dropped, as Heat allows);
  ``{if: [condition, a, b]}`` in properties is ``a`` or ``b``;
- ``resources``: each resource's ``depends_on`` (a name or a list) and
  every ``{get_resource: name}`` and ``{get_attr: [name, ...]}`` in its
  properties are dependencies;
- ``OS::Nova::Server`` is placed (:mod:`scheduler.stacks.servers`):
  ``flavor`` (a name from the flavors file), ``image``,
  ``availability_zone`` (nova's ``zone:host:node`` forcing too),
  ``scheduler_hints``, where
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

from typing import Any
import uuid as uuidlib

from scheduler import exception
from scheduler.stacks.conditions import conditions
from scheduler.stacks.functions import mapping
from scheduler.stacks.functions import resolve
from scheduler.stacks.functions import Truth
from scheduler.stacks.parameters import parameter_values
from scheduler.stacks.servers import placement
from scheduler.stacks.servers import SERVER
from scheduler.stacks.servers import server_group
from scheduler.stacks.servers import SERVER_GROUP
from scheduler.stacks.ids import canonical_id
from scheduler.stacks.ids import CONSUMER_NAMESPACE
from scheduler.stacks.limits import Budget

RESOURCE_GROUP = "OS::Heat::ResourceGroup"


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
    default the id, is Heat's ``OS::stack_name``). What its conditions
    and resources' properties expand to is bounded as a whole
    (:class:`scheduler.stacks.limits.Budget`), the aliases of a template
    that was not read by :func:`scheduler.stacks.files.load_yaml` and
    the get_params of one that was.
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
    budget = Budget()
    truth = conditions(template.get("conditions") or {}, values, budget)
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
    groups = {str(name): server_group(str(name), body, types, values,
                                      stack_id, truth, budget)
              for name, body in resources.items()
              if body["type"] == SERVER_GROUP}
    out = {}
    for name, body in resources.items():
        out[str(name)] = _resource(str(name), body, types, values, flavors,
                                   groups, truth, disabled, budget)
    return {"stack_id": stack_id, "project_id": project_id,
            "user_id": user_id, "resources": out}


def _resource(name: str, body: dict, types: dict[str, str],
              values: dict[str, Any], flavors: dict[str, dict[str, Any]],
              groups: dict[str, dict[str, Any]],
              truth: Truth | None = None,
              disabled: frozenset[str] = frozenset(),
              budget: Budget | None = None) -> dict[str, Any]:
    """Resource ``name`` of the stack; ``disabled``: the template's
    resources whose condition is false (not dependencies); its
    properties resolved within ``budget`` (the template's)."""
    where = f"resources.{name}"
    depends = body.get("depends_on") or []
    if isinstance(depends, str):
        depends = [depends]
    if not isinstance(depends, list):
        raise exception.InvalidRequest(
            f"{where}.depends_on: expected a resource name or a list")
    refs: set[str] = set()
    props = mapping(resolve(body.get("properties") or {},
                            f"{where}.properties", values, types, refs,
                            truth, budget), f"{where}.properties")
    out: dict[str, Any] = {"spec": None,
                           "depends_on": sorted(set(map(str, depends))
                                                - disabled)}
    count = 1
    where = f"{where}.properties"
    if body["type"] == RESOURCE_GROUP:
        # Heat creates ``count`` copies of resource_def: servers are
        # placed as one resource of that many instances.
        count = _count(props.get("count", 1), f"{where}.count")
        definition = mapping(props.get("resource_def") or {},
                             f"{where}.resource_def")
        if definition.get("type") == SERVER and count:
            where = f"{where}.resource_def.properties"
            props = mapping(definition.get("properties") or {}, where)
            body = {**body, "type": SERVER}
    if body["type"] == SERVER:
        out.update(placement(props, count, where, types, flavors, groups,
                             refs))
    out["depends_on"] = sorted(set(out["depends_on"]) | refs)
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


