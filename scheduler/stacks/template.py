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
  one resource of that many instances (``%index%``, or its
  ``index_var``, may tell their names apart, not where they go);
- the stack's environment (:mod:`scheduler.stacks.environment`): its
  ``parameters``, ``parameter_defaults`` (in every template) and
  ``resource_registry`` (each type is read as it maps it);
- a resource whose type is a template of the stack's ``files`` (a
  template resource, :mod:`scheduler.stacks.nested`): its properties are
  the nested template's parameters, its resources are the stack's, named
  ``resource/nested`` (``app/web``); it is ordered after them, they after
  whatever it depends on. A ResourceGroup of templates (or of groups)
  makes ``count`` of them, ``tier/0``, ``tier/1``..., each ordered after
  its own (``tier/0/web``) and ``tier`` after them. Stacks nest at most
  5 deep, as Heat's do; a type naming a template file the files lack is
  refused;
- every other type (networks, volumes, load balancers, server groups) is
  ordered, not placed.

Mistakes are ``InvalidRequest`` naming the field
(``resources.web.properties.flavor: unknown flavor 'm1.huge'``); in a
nested template, after the template and the resource it is nested as
(``template app.yaml (resource tier/0): resources.web.properties...``).
"""
from __future__ import annotations

from collections import ChainMap
import dataclasses
from typing import Any, Mapping
import uuid as uuidlib

from scheduler import exception
from scheduler.stacks.conditions import conditions
from scheduler.stacks.environment import is_template_name
from scheduler.stacks.environment import Kind
from scheduler.stacks.environment import read_environment
from scheduler.stacks.environment import resolve_type
from scheduler.stacks.environment import RESOURCE_GROUP
from scheduler.stacks.functions import mapping
from scheduler.stacks.functions import resolve
from scheduler.stacks.functions import Truth
from scheduler.stacks.ids import canonical_id
from scheduler.stacks.ids import CONSUMER_NAMESPACE
from scheduler.stacks.nested import Group
from scheduler.stacks.nested import indexed
from scheduler.stacks.nested import Labelled
from scheduler.stacks.nested import labelled
from scheduler.stacks.nested import outer_references
from scheduler.stacks.nested import parameters_given
from scheduler.stacks.nested import read_group
from scheduler.stacks.nested import Reading
from scheduler.stacks.nested import Scope
from scheduler.stacks.parameters import parameter_values
from scheduler.stacks.servers import placement
from scheduler.stacks.servers import RELATIONS
from scheduler.stacks.servers import SERVER
from scheduler.stacks.servers import server_group
from scheduler.stacks.servers import SERVER_GROUP

def stack_id_for(name: str) -> str:
    """The stack id a stack name stands for (same name, same stack)."""
    return str(uuidlib.uuid5(CONSUMER_NAMESPACE, f"stack:{name}"))


def to_stack(template: Any, stack_id: str,
             flavors: dict[str, dict[str, Any]],
             parameters: dict[str, Any] | None = None,
             project_id: str | None = None,
             user_id: str | None = None,
             stack_name: str | None = None,
             files: dict[str, Any] | None = None,
             environment: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``select_stack`` request for ``template`` (``stack_name``,
    default the id, is Heat's ``OS::stack_name``).

    ``files`` are the stack's files as Heat keeps them (name or URL, as
    the types name them -> YAML or JSON text, or the template already
    read); ``environment`` its environment
    (:mod:`scheduler.stacks.environment`), whose ``parameters``
    ``parameters`` overrides, name by name. What its conditions and
    resources' properties expand to, in every template, is bounded as a
    whole (:class:`scheduler.stacks.limits.Budget`), the aliases of a
    template that was not read by :func:`scheduler.stacks.files.load_yaml`
    and the get_params of one that was; and so are its resources, nested
    ones counted (:data:`scheduler.stacks.stack.MAX_RESOURCES`).
    :raises InvalidRequest: naming the field at fault (in a nested
        template, after the template and the resource it is nested as).
    """
    if not isinstance(template, dict):
        raise exception.InvalidRequest("template: expected a mapping")
    # The server groups' uuids and OS::stack_id derive from it.
    stack_id = canonical_id(stack_id)
    if files is None:
        files = {}
    if not isinstance(files, dict):
        raise exception.InvalidRequest(
            "files: expected a mapping of file names to their contents")
    env = read_environment(environment, files)
    reading = Reading(stack_id=stack_id, project_id=project_id,
                      flavors=flavors, files=files, environment=env)
    root = Scope(stack_name=stack_name or stack_id, stack_id=stack_id,
                 registry=env.registry)
    try:
        _template(template, {**env.parameters, **(parameters or {})},
                  root, reading)
    except Labelled as e:
        # Its class is this module's business: an InvalidRequest as any.
        raise exception.InvalidRequest(e.message) from None
    return {"stack_id": stack_id, "project_id": project_id,
            "user_id": user_id, "resources": reading.resources}


@dataclasses.dataclass(frozen=True)
class _Template:
    """One template as read in its scope: its parameters' values, the
    truth of its conditions, its resources whose condition holds (and
    the names of those whose condition does not), each one's type as
    the registry resolves it (and just the type), and its server
    groups."""
    values: dict[str, Any]
    truth: Truth
    resources: dict[str, dict]
    disabled: frozenset[str]
    kinds: dict[str, Kind]
    types: dict[str, str]
    groups: dict[str, dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class _Names:
    """What the names in a resource's resolved properties are: the
    resources' types and server groups, by name in ``scope`` (the
    template they were resolved in) or from the root (``/`` first)."""
    types: Mapping[str, str]
    groups: Mapping[str, dict[str, Any]]
    scope: Scope


def _template(template: Any, given: dict[str, Any], scope: Scope,
              reading: Reading) -> set[str]:
    """Reads ``template``, the template of ``scope`` whose parameters are
    ``given``, into ``reading``.
    :returns: the paths of its resources.
    :raises InvalidRequest: naming the field at fault, after
        ``scope.label``."""
    with labelled(scope.label):
        read = _read(template, given, scope, reading)
        names = _Names(ChainMap(read.types, reading.types),
                       ChainMap(read.groups, reading.groups), scope)
        return {_resource(name, body, read, names, scope, reading)
                for name, body in read.resources.items()}


def _read(template: Any, given: dict[str, Any], scope: Scope,
          reading: Reading) -> _Template:
    """``template`` read in ``scope``; its resources' types and server
    groups known to ``reading`` by their names from the root too."""
    if not isinstance(template, dict):
        raise exception.InvalidRequest("template: expected a mapping")
    if "heat_template_version" not in template:
        raise exception.InvalidRequest(
            "heat_template_version: missing (not a HOT template?)")
    # Heat's pseudo parameters: templates name their servers with them.
    values = {"OS::stack_name": scope.stack_name,
              "OS::stack_id": scope.stack_id,
              "OS::project_id": reading.project_id,
              **parameter_values(template.get("parameters") or {}, given,
                                 reading.environment.defaults)}
    declared = template.get("resources")
    # A nested template may have none (Heat's may not, but the root's
    # having none is a mistake worth naming).
    if declared is None and scope.depth:
        declared = {}
    if not isinstance(declared, dict) or not (declared or scope.depth):
        raise exception.InvalidRequest(
            "resources: expected a mapping of at least one resource")
    declared = {str(name): body for name, body in declared.items()}
    # Heat creates no resource whose condition is false: neither do we
    # place it (get_resource / get_attr of it are then to no such resource;
    # a depends_on naming it is dropped, as Heat allows dependencies on a
    # resource defined under a condition).
    truth = conditions(template.get("conditions") or {}, values,
                       reading.budget)
    resources = {name: body for name, body in declared.items()
                 if not isinstance(body, dict) or "condition" not in body
                 or truth(body["condition"], f"resources.{name}.condition")}
    kinds = {}
    for name, body in resources.items():
        if "/" in name:
            # It would be taken for a nested resource's path.
            raise exception.InvalidRequest(
                f"resources.{name}: a resource's name cannot hold '/' "
                f"(Heat's cannot either)")
        if not isinstance(body, dict) or not isinstance(body.get("type"),
                                                        str):
            raise exception.InvalidRequest(
                f"resources.{name}.type: missing")
        kinds[name] = resolve_type(body["type"], scope.registry,
                                   reading.files, f"resources.{name}.type")
    types = {name: kind.type for name, kind in kinds.items()}
    groups = {name: server_group(name, resources[name], types, values,
                                 reading.stack_id, truth, reading.budget,
                                 path=scope.path(name))
              for name, kind in kinds.items() if kind.type == SERVER_GROUP}
    for name, kind in kinds.items():
        reading.types["/" + scope.path(name)] = kind.type
        if name in groups:
            reading.groups["/" + scope.path(name)] = groups[name]
    return _Template(values=values, truth=truth, resources=resources,
                     disabled=frozenset(declared) - set(resources),
                     kinds=kinds, types=types, groups=groups)


def _resource(name: str, body: dict, read: _Template, names: _Names,
              scope: Scope, reading: Reading) -> str:
    """Resource ``name`` of template ``read``, its properties resolved.
    :returns: its path."""
    where = f"resources.{name}"
    depends = body.get("depends_on") or []
    if isinstance(depends, str):
        depends = [depends]
    if not isinstance(depends, list):
        raise exception.InvalidRequest(
            f"{where}.depends_on: expected a resource name or a list")
    refs: set[str] = set()
    props = mapping(resolve(body.get("properties") or {},
                            f"{where}.properties", read.values, read.types,
                            refs, read.truth, reading.budget),
                    f"{where}.properties")
    return _make(name, where, read.kinds[name], props, names, scope,
                 reading, set(map(str, depends)) - read.disabled, refs)


def _make(name: str, where: str, kind: Kind, props: dict, names: _Names,
          scope: Scope, reading: Reading, depends: set[str],
          refs: set[str]) -> str:
    """Resource ``name`` of ``scope``, at ``where``, of ``kind``, its
    properties ``props``; ``depends`` its depends_on, ``refs`` the
    resources its properties reference (a relation is taken out: it is a
    dependency already), both named as ``names`` say. It and, for a
    stack resource, the resources of its stack go into ``reading``.
    :returns: its path."""
    group = (read_group(props, f"{where}.properties", scope, reading.files)
             if kind.type == RESOURCE_GROUP else None)
    resource = _placed(kind, group, props, where, names, scope, reading,
                       refs)
    needs = {names.scope.qualified(n) for n in depends | refs} | set(
        scope.inherited)
    inner = _stack(name, where, kind, group, props, names, scope, reading,
                   tuple(sorted(needs)))
    resource["depends_on"] = sorted(needs | inner)
    path = scope.path(name)
    reading.add(path, resource)
    return path


def _placed(kind: Kind, group: Group | None, props: dict, where: str,
            names: _Names, scope: Scope, reading: Reading,
            refs: set[str]) -> dict[str, Any]:
    """What is placed for a resource: a server, or a group's ``count``
    servers as one resource of that many instances; else nothing (spec
    None)."""
    if kind.type == SERVER:
        return _server(props, 1, f"{where}.properties", names, reading,
                       refs)
    if group is None or group.kind.type != SERVER or not group.count:
        return {"spec": None}
    # Heat makes the group's servers in a stack of its own.
    scope.check_depth(f"{where}.type")
    where = f"{where}.properties.resource_def.properties"
    first = _server(indexed(group.props, group.var, "0", reading.budget,
                            where), group.count, where, names, reading, refs)
    # One spec places them all: the index may name them (a server's name
    # is not placed), not tell them apart where they go.
    if group.count > 1 and _server(
            indexed(group.props, group.var, "1", reading.budget, where),
            group.count, where, names, reading, set(refs)) != first:
        raise exception.InvalidRequest(
            f"{where}: {group.var} in what places a server (its flavor, "
            f"image, zone or hints) would make the group's servers differ, "
            f"but they are placed alike, as one resource")
    return first


def _server(props: dict, count: int, where: str, names: _Names,
            reading: Reading, refs: set[str]) -> dict[str, Any]:
    """:func:`scheduler.stacks.servers.placement`, its relations named by
    their paths."""
    out = placement(props, count, where, names.types, reading.flavors,
                    names.groups, refs)
    for relation in RELATIONS:
        if relation in out:
            out[relation] = [names.scope.qualified(n)
                             for n in out[relation]]
    return out


def _stack(name: str, where: str, kind: Kind, group: Group | None,
           props: dict, names: _Names, scope: Scope, reading: Reading,
           needs: tuple[str, ...]) -> set[str]:
    """The resources of the stack resource ``name`` makes (a template's,
    or a group's of templates or of groups), each depending on ``needs``
    (the resource's own dependencies), into ``reading``.
    :returns: their paths (none for any other resource)."""
    if group is not None and (group.kind.type == RESOURCE_GROUP
                              or _is_template(group.kind, reading)):
        # Heat checks the definition whatever the count.
        _check_readable(group.kind, f"{where}.properties.resource_def",
                        reading)
        return _members(name, where, group, names, scope, reading, needs)
    if not _is_template(kind, reading):
        return set()
    _check_readable(kind, where, reading)
    path = scope.path(name)
    inner = scope.nested(name, f"{where}.type", reading.stack_id, needs,
                         label=f"template {kind.type} (resource {path}): ",
                         entry=kind.entry)
    given = parameters_given(props, names.scope, reading.budget,
                             f"{where}.properties")
    return _template(reading.template(kind.type), given, inner, reading)


def _members(name: str, where: str, group: Group, names: _Names,
             scope: Scope, reading: Reading,
             needs: tuple[str, ...]) -> set[str]:
    """The ``count`` members of group ``name`` (templates, or groups), in
    a stack of their own as Heat makes them, named by their index."""
    members = scope.nested(name, f"{where}.type", reading.stack_id, needs)
    if group.count > reading.room():
        raise exception.InvalidRequest(
            f"{where}.properties.count: {group.count} members, but the "
            f"stack may hold {reading.room()} resources more")
    where = f"{where}.properties.resource_def"
    # Named from the root: the members' stack has none of these names.
    props = outer_references(group.props, names.scope, reading.budget,
                             f"{where}.properties")
    absolute = _Names(reading.types, reading.groups, members)
    return {_make(str(i), where, group.kind,
                  indexed(props, group.var, str(i), reading.budget, where),
                  absolute, members, reading, set(), set())
            for i in range(group.count)}


def _is_template(kind: Kind, reading: Reading) -> bool:
    """Whether a resource of ``kind`` is a template resource (one not
    among the files is refused: it cannot be read)."""
    return kind.type in reading.files or is_template_name(kind.type)


def _check_readable(kind: Kind, where: str, reading: Reading) -> None:
    """That a template resource of ``kind``, at ``where``, is among the
    stack's files.
    :raises InvalidRequest: naming it (and the registry entry naming
        it)."""
    if _is_template(kind, reading) and kind.type not in reading.files:
        mapped = (f" (resource_registry maps {kind.entry!r} to it)"
                  if kind.entry else "")
        raise exception.InvalidRequest(
            f"{where}.type: template {kind.type!r}{mapped} is not among "
            f"the stack's files")
