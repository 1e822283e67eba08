"""Nested stacks: what a template resource (a resource whose type is a
template of the stack's ``files``) and an ``OS::Heat::ResourceGroup``
make, as Heat makes them, read as part of one stack.

Each resource is named by its path of Heat resource names from the root,
joined with ``/`` (Heat forbids ``/`` in a name): server ``web`` of
template resource ``app`` is ``app/web``; member ``3`` of a group
``tier`` is ``tier/3``, and its server ``web`` ``tier/3/web``. A
:class:`Scope` is one template of the stack (the root or a nested one), a
:class:`Reading` what all of them share.

A nested template's pseudo parameters are deterministic stand-ins:
Heat names a nested stack ``<parent>-<resource>-<random>`` and gives it a
random id; here ``OS::stack_name`` is ``<parent>-<resource>`` and
``OS::stack_id`` a uuid derived from the stack and the path. Nothing
placed may depend on them (a server's name may).
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator
import uuid as uuidlib

from scheduler import exception
from scheduler.stacks.environment import Environment
from scheduler.stacks.environment import Kind
from scheduler.stacks.environment import resolve_type
from scheduler.stacks.files import parse_yaml
from scheduler.stacks.functions import mapping
from scheduler.stacks.ids import CONSUMER_NAMESPACE
from scheduler.stacks.limits import Budget
from scheduler.stacks.stack import MAX_RESOURCES

#: How deep stacks may nest (Heat's ``max_nested_stack_depth`` default):
#: the root is at 0; a template resource's stack, and a ResourceGroup's
#: (whose members are a stack of their own in Heat), one deeper.
MAX_NESTED_DEPTH = 5
#: What a ResourceGroup's ``index_var`` is when it gives none (Heat's).
INDEX_VAR = "%index%"
_REFERENCES = ("get_resource", "get_attr")


class Labelled(exception.InvalidRequest):
    """A mistake in a nested template, its message already naming the
    template (so the templates around it leave it as it is)."""


@contextlib.contextmanager
def labelled(label: str) -> Iterator[None]:
    """Mistakes raised within, but for those of templates nested deeper,
    begin with ``label`` (none at the root)."""
    try:
        yield
    except Labelled:
        raise
    except exception.InvalidRequest as e:
        if not label:
            raise
        raise Labelled(label + e.message) from None


@dataclasses.dataclass
class Reading:
    """What reading one stack shares across its templates: its id,
    flavors, files and environment; the resources read so far, by path;
    and the types and server groups of every template's resources by
    absolute name (``/`` and the path), for references a parent template
    passes into a nested one (:func:`outer_references`)."""
    stack_id: str
    project_id: str | None
    flavors: dict[str, dict[str, Any]]
    files: dict[str, Any]
    environment: Environment
    budget: Budget = dataclasses.field(default_factory=Budget)
    resources: dict[str, dict[str, Any]] = dataclasses.field(
        default_factory=dict)
    types: dict[str, str] = dataclasses.field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = dataclasses.field(
        default_factory=dict)
    _parsed: dict[str, Any] = dataclasses.field(default_factory=dict)

    def add(self, path: str, resource: dict[str, Any]) -> None:
        """Resource ``path`` of the stack.
        :raises InvalidRequest: the stack would hold more than
            :data:`MAX_RESOURCES` (a group of templates multiplies them:
            refused as they are read, not once all are)."""
        if path not in self.resources and \
                len(self.resources) >= MAX_RESOURCES:
            raise exception.InvalidRequest(
                f"resources: more than {MAX_RESOURCES} resources, those "
                f"of nested templates and groups counted")
        self.resources[path] = resource

    def room(self) -> int:
        """How many more resources the stack may hold."""
        return MAX_RESOURCES - len(self.resources)

    def template(self, name: str) -> Any:
        """Template file ``name`` of the stack's files, parsed once (YAML
        or JSON text, as Heat keeps it, held to the limits of a template
        file; or already a mapping).
        :raises InvalidRequest: naming the file."""
        if name not in self._parsed:
            data = self.files[name]
            self._parsed[name] = (parse_yaml(data, f"template {name}")
                                  if isinstance(data, (str, bytes))
                                  else data)
        return self._parsed[name]


@dataclasses.dataclass(frozen=True)
class Scope:
    """One template of the stack: the root, a nested template resource's
    or a group's members.

    ``prefix`` begins the names of its resources (``""``, ``"app/"``);
    ``label`` its mistakes; ``depth`` is how deep its stack is;
    ``registry`` the environment's, less the entry that made it (as Heat's
    nested environment); ``inherited``: what each of its resources
    depends on besides (its parent resource's dependencies: Heat creates
    a nested stack once they are)."""
    stack_name: str
    stack_id: str
    registry: dict[str, str]
    prefix: str = ""
    label: str = ""
    depth: int = 0
    inherited: tuple[str, ...] = ()

    def path(self, name: str) -> str:
        """Resource ``name`` of this template, named from the root."""
        return self.prefix + name

    def qualified(self, name: str) -> str:
        """A name this template's values give: its own resource's, or
        (``/`` first) one from the root (:func:`outer_references`)."""
        return name[1:] if name.startswith("/") else self.prefix + name

    def check_depth(self, where: str) -> None:
        """That a stack resource (a template's, a group) of this template,
        at ``where``, may make a stack one deeper.
        :raises InvalidRequest: deeper than :data:`MAX_NESTED_DEPTH`."""
        if self.depth >= MAX_NESTED_DEPTH:
            raise exception.InvalidRequest(
                f"{where}: nested stacks more than {MAX_NESTED_DEPTH} deep "
                f"(Heat's max_nested_stack_depth; a ResourceGroup's is one "
                f"too)")

    def nested(self, name: str, where: str, root_id: str,
               inherited: tuple[str, ...], label: str | None = None,
               entry: str | None = None) -> Scope:
        """The scope of the stack resource ``name`` of this template
        makes (at ``where``): a template resource's (``label`` naming
        its template; its registry less ``entry``, the registry entry
        that made it), else a group's members'.
        :raises InvalidRequest: deeper than :data:`MAX_NESTED_DEPTH`."""
        self.check_depth(where)
        path = self.path(name)
        registry = {k: v for k, v in self.registry.items() if k != entry}
        return Scope(
            stack_name=f"{self.stack_name}-{name}",
            stack_id=str(uuidlib.uuid5(CONSUMER_NAMESPACE,
                                       f"{root_id}/stack/{path}")),
            registry=registry, prefix=path + "/",
            label=self.label if label is None else label,
            depth=self.depth + 1, inherited=inherited)


def outer_references(value: Any, scope: Scope, budget: Budget,
                     where: str) -> Any:
    """``value``, resolved in template ``scope``, to be handed to a nested
    template (a property, a group member's definition): each
    ``get_resource`` / ``get_attr`` naming a resource of ``scope`` names
    it from the root instead (``/`` first: no resource of the nested
    template is so named), so a server group's or a server's id passed in
    is still known for what it is. Each value copied is spent from
    ``budget``."""
    budget.spend(where)
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn in _REFERENCES:
            name = arg[0] if fn == "get_attr" and isinstance(
                arg, list) and arg else arg
            if isinstance(name, str) and not name.startswith("/"):
                name = "/" + scope.path(name)
                arg = [name, *arg[1:]] if fn == "get_attr" else name
            return {fn: arg}
    if isinstance(value, dict):
        return {k: outer_references(v, scope, budget, where)
                for k, v in value.items()}
    if isinstance(value, list):
        return [outer_references(v, scope, budget, where) for v in value]
    return value


def indexed(value: Any, var: str, index: str, budget: Budget,
            where: str) -> Any:
    """``value`` (a group's resource_def properties) with ``var`` replaced
    by the member's ``index`` in every text in it, as Heat replaces a
    ResourceGroup's ``index_var`` (not in keys, nor in the names a
    get_resource / get_attr gives: Heat replaces once they are ids).
    Each value copied is spent from ``budget``."""
    budget.spend(where)
    if isinstance(value, str):
        return value.replace(var, index)
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in _REFERENCES:
            return value
        return {k: indexed(v, var, index, budget, where)
                for k, v in value.items()}
    if isinstance(value, list):
        return [indexed(v, var, index, budget, where) for v in value]
    return value


def index_var(props: dict, where: str) -> str:
    """A ResourceGroup's ``index_var``: text of 3 characters or more
    (Heat's constraint), ``%index%`` if none."""
    var = props.get("index_var", INDEX_VAR)
    if not isinstance(var, str) or len(var) < 3:
        raise exception.InvalidRequest(
            f"{where}.index_var: expected text of 3 characters or more, "
            f"got {str(var)[:60]!r}")
    return var


def parameters_given(props: dict, scope: Scope, budget: Budget,
                     where: str) -> dict[str, Any]:
    """A nested template's parameter values from its resource's
    ``props`` (resolved in its parent ``scope``): those that are not
    null (Heat passes no null property: the parameter's default holds),
    references to the parent's resources named from the root."""
    return {name: outer_references(value, scope, budget,
                                   f"{where}.{name}")
            for name, value in props.items() if value is not None}


@dataclasses.dataclass(frozen=True)
class Group:
    """An ``OS::Heat::ResourceGroup``'s definition, its properties
    resolved: ``count`` members of ``kind`` (the registry followed) with
    ``props`` (null ones left out, as Heat does), ``var`` replaced by
    each member's index."""
    count: int
    kind: Kind
    props: dict
    var: str


def read_group(props: dict, where: str, scope: Scope,
               files: dict[str, Any]) -> Group:
    """The group whose properties, at ``where``, are ``props``.
    :raises InvalidRequest: naming the property at fault."""
    count = _count(props.get("count", 1), f"{where}.count")
    definition = mapping(props.get("resource_def") or {},
                         f"{where}.resource_def")
    kind = definition.get("type")
    if not isinstance(kind, str):
        raise exception.InvalidRequest(f"{where}.resource_def.type: missing")
    member = mapping(definition.get("properties") or {},
                     f"{where}.resource_def.properties")
    return Group(count=count,
                 kind=resolve_type(kind, scope.registry, files,
                                   f"{where}.resource_def.type"),
                 props={k: v for k, v in member.items() if v is not None},
                 var=index_var(props, where))


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
