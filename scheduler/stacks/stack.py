"""The ``select_stack`` request (architecture.rst "Stacks"), validated.

A stack is a ``stack_id`` and named resources; a resource with a ``spec``
is placed (its instances get claims), one without (a network, a volume) is
only ordered. ``depends_on`` and the ``same_host`` / ``different_host``
relations between resources are dependencies, as Heat's ``get_resource``
references are.

Consumer uuids a spec does not give are derived from the stack id, the
resource name and the instance's index (``stacks.ids``), so sending the
same stack again names the same consumers. The validated stack has one canonical JSON
definition; two sends of one stack are the same stack exactly when their
definitions are equal (``stacks.definition`` reads one back and says what
changed between two).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import jsonschema

from scheduler import exception
from scheduler.request.hints import HOST_HINTS
from scheduler.request.schema import check_depth
from scheduler.request.schema import check_text_size
from scheduler.request.schema import check_utf8
from scheduler.request.schema import describe
from scheduler.request.spec import RequestSpec
from scheduler.stacks import graph
from scheduler.stacks.ids import canonical_id
from scheduler.stacks.ids import consumer_uuid
from scheduler.stacks.ids import with_consumers

#: Resources in one stack; Heat's own default limit is 1,000 per stack.
MAX_RESOURCES = 1000
#: The keys and strings of all the resources, in characters: each spec's
#: maps are bounded (request.schema.MAX_MAP_TEXT), but a thousand of them
#: would make a definition of gigabytes, stored in the ``stacks`` table.
MAX_STACK_TEXT = 4 * 1024 * 1024
RELATIONS = ("same_host", "different_host")

_NAME = {"type": "string", "minLength": 1, "maxLength": 255}
# The names in these lists are checked by _check_references, not by the
# schema: jsonschema's per-item checks (and pairwise uniqueItems) of a tier
# of 50 servers each depending on 50 others cost more than placing the
# stack. Repeated names mean nothing more than one.
_NAMES = {"type": "array", "maxItems": MAX_RESOURCES}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["stack_id", "resources"],
    "properties": {
        # Read by canonical_id alone, as release_stack reads its argument.
        "stack_id": {},
        "project_id": {"type": ["string", "null"], "maxLength": 255},
        "user_id": {"type": ["string", "null"], "maxLength": 255},
        "resources": {
            "type": "object",
            "minProperties": 1,
            "maxProperties": MAX_RESOURCES,
            "propertyNames": _NAME,
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    # The spec itself is checked by RequestSpec's schema.
                    "spec": {"type": ["object", "null"]},
                    "depends_on": _NAMES,
                    "same_host": _NAMES,
                    "different_host": _NAMES,
                },
            },
        },
    },
}
_VALIDATOR = jsonschema.Draft7Validator(SCHEMA)


@dataclasses.dataclass(frozen=True)
class Resource:
    name: str
    spec: RequestSpec | None            # None: ordered, not placed
    depends_on: tuple[str, ...] = ()
    same_host: tuple[str, ...] = ()
    different_host: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Stack:
    stack_id: str
    resources: dict[str, Resource]      # by name, sorted
    order: list[list[str]]              # Heat's creation batches
    definition: str                     # canonical JSON, see module doc
    project_id: str | None = None
    user_id: str | None = None

    @property
    def placed(self) -> dict[str, Resource]:
        """The resources with a spec, by name."""
        return {n: r for n, r in self.resources.items() if r.spec}

    @property
    def consumers(self) -> list[str]:
        """Every instance uuid of the stack, resource by resource."""
        return [u for r in self.placed.values()
                for u in r.spec.instance_uuids]

    @property
    def named_consumers(self) -> list[str]:
        """The instance uuids the specs gave (not derived from the stack
        id, so another stack or request may name them too)."""
        return [u for name, r in self.placed.items()
                for i, u in enumerate(r.spec.instance_uuids)
                if u != consumer_uuid(self.stack_id, name, i)]

    @classmethod
    def from_primitives(cls, stack: Any,
                        max_instances: int = 1000) -> Stack:
        """Validate a ``stack`` dict and build the Stack.

        :raises InvalidRequest: naming the field (``resources.web.
            spec.flavor.vcpus: ...``), an unknown reference
            (``resources.web.depends_on: no resource named 'db'``), a
            dependency cycle (``depends_on cycle: a -> b -> a``), a host
            hint naming an instance of the stack, more than
            ``max_instances`` instances in all, or resources holding more
            than :data:`MAX_STACK_TEXT` characters of text.
        """
        if not isinstance(stack, dict):
            raise exception.InvalidRequest(
                f"stack: expected an object, got {type(stack).__name__}")
        # First: the schema words a bad value, and a spec is copied and
        # encoded before it is validated.
        _check_depth(stack)
        error = jsonschema.exceptions.best_match(
            _VALIDATOR.iter_errors(stack))
        if error is not None:
            # Paths from the stack's top, as a template's errors and the
            # stack's definition name them (resources.web.spec...); the
            # stack itself is "stack".
            path = ".".join(str(p) for p in error.absolute_path) or "stack"
            raise exception.InvalidRequest(f"{path}: {describe(error)}")
        check_text_size("resources", stack["resources"],
                        MAX_STACK_TEXT)
        _check_unicode(stack)
        stack_id = canonical_id(stack["stack_id"])
        project_id = stack.get("project_id")
        user_id = stack.get("user_id")
        given = stack["resources"]
        parsed: dict[str, RequestSpec] = {}
        specs: dict[str, RequestSpec | None] = {}
        names = sorted(given)
        total = 0
        for i, name in enumerate(names):
            specs[name] = spec = _spec(name, given[name].get("spec"),
                                       project_id, user_id, max_instances,
                                       parsed)
            total += spec.num_instances if spec else 0
            if total > max_instances:
                # Refused at once: each spec validated makes its instances'
                # uuids, and so would deriving the consumers, a million of
                # them for 1,000 resources of 1,000 instances.
                total += sum(_requested(given[n].get("spec"))
                             for n in names[i + 1:])
                raise exception.InvalidRequest(
                    f"resources: {total} instances in all, at most "
                    f"{max_instances} allowed")
        resources = {}
        for name, spec in specs.items():
            raw = given[name]
            resources[name] = Resource(
                name=name,
                spec=with_consumers(stack_id, name, spec, raw.get("spec")),
                depends_on=_names(raw, "depends_on"),
                same_host=_names(raw, "same_host"),
                different_host=_names(raw, "different_host"))
        _check_references(resources)
        _check_hints(resources, _check_consumers(resources))
        _check_groups(resources)
        order = graph.batches({name: _edges(r)
                               for name, r in resources.items()})
        return cls(stack_id=stack_id, resources=resources, order=order,
                   definition=_definition(stack_id, project_id, user_id,
                                          resources),
                   project_id=project_id, user_id=user_id)


def _check_depth(stack: dict) -> None:
    """Each resource's spec nests as deep as one sent alone may (the edge's
    one limit, :func:`scheduler.request.schema.check_depth`), and so does
    any other field of the stack or of a resource.

    :raises InvalidRequest: naming the field, e.g. ``resources.web.
        spec.scheduler_hints.h...: nested deeper than the 64 levels
        allowed``.
    """
    for key, value in stack.items():
        if key != "resources" or not isinstance(value, dict):
            check_depth(value, str(key))
            continue
        for name, resource in value.items():
            where = f"resources.{str(name)[:60]}"
            if not isinstance(resource, dict):
                check_depth(resource, where)
                continue
            for field, item in resource.items():
                check_depth(item, f"{where}.{str(field)[:60]}")


def _check_unicode(stack: dict) -> None:
    """Resource names and the stack's project and user must be text UTF-8
    can carry: they derive consumer uuids and are stored."""
    check_utf8("project_id", stack.get("project_id"))
    check_utf8("user_id", stack.get("user_id"))
    for name in stack["resources"]:
        check_utf8("resources", name)


def _names(raw: dict, field: str) -> tuple:
    """The resource names in ``raw[field]``, sorted, each once (anything
    else is kept for _check_references to name)."""
    values = raw.get(field) or ()
    if all(isinstance(v, str) for v in values):
        return tuple(sorted(set(values)))
    return tuple(values)


def _spec(name: str, spec: dict | None, project_id: str | None,
          user_id: str | None, max_instances: int,
          parsed_before: dict[str, RequestSpec]) -> RequestSpec | None:
    """The resource's RequestSpec, its consumers not yet derived (see
    :func:`scheduler.stacks.ids.with_consumers`). Specs equal to one validated before
    (``parsed_before``, by their JSON) are not validated again: a stack's
    servers mostly share a few specs, and validation is most of the cost of
    reading a stack."""
    if spec is None:
        return None
    prefix = f"resources.{name}"
    # The stack's project and user are every spec's unless it says.
    spec = {"project_id": project_id, "user_id": user_id, **spec}
    try:
        key = json.dumps(spec, sort_keys=True)
    except (TypeError, ValueError):
        key = None      # not JSON: let the schema name the field
    parsed = parsed_before.get(key) if key is not None else None
    if parsed is None:
        try:
            parsed = RequestSpec.from_primitives(spec, max_instances)
        except exception.InvalidRequest as e:
            raise exception.InvalidRequest(
                f"{prefix}.{e.message}") from None
        if key is not None and spec.get("instance_uuids"):
            key = None  # explicit consumers are this resource's alone
        if key is not None:
            parsed_before[key] = parsed
    return parsed


def _requested(spec: Any) -> int:
    """How many instances a spec not validated asks for (as validation
    counts them, if it is valid)."""
    if not isinstance(spec, dict):
        return 0
    uuids = spec.get("instance_uuids")
    if isinstance(uuids, list):
        return len(uuids)
    num = spec.get("num_instances")
    return num if type(num) is int and num > 0 else 1


def _edges(r: Resource) -> dict[str, str]:
    """The resources ``r`` waits for, each with the field that names it
    (``depends_on`` first: a relation also named there is a dependency)."""
    edges: dict[str, str] = {}
    for field in ("depends_on",) + RELATIONS:
        for name in getattr(r, field):
            edges.setdefault(name, field)
    return edges


def _check_references(resources: dict[str, Resource]) -> None:
    for name, r in resources.items():
        for field in ("depends_on",) + RELATIONS:
            for ref in getattr(r, field):
                where = f"resources.{name}.{field}"
                if not isinstance(ref, str):
                    raise exception.InvalidRequest(
                        f"{where}: {str(ref)[:60]!r} is not a resource name")
                if ref not in resources:
                    raise exception.InvalidRequest(
                        f"{where}: no resource named {ref!r}")
                if ref == name:
                    raise exception.InvalidRequest(
                        f"{where}: a resource cannot name itself")
                if field in RELATIONS and not (
                        r.spec and resources[ref].spec):
                    raise exception.InvalidRequest(
                        f"{where}: {ref!r} and {name!r} must both be "
                        f"placed (have a spec) to be on the same or "
                        f"different hosts")
        both = set(r.same_host) & set(r.different_host)
        if both:
            raise exception.InvalidRequest(
                f"resources.{name}: {sorted(both)[0]!r} is both in "
                f"same_host and in different_host")


def _check_consumers(resources: dict[str, Resource]) -> dict[str, str]:
    """:returns: consumer uuid -> the resource it is an instance of."""
    owner: dict[str, str] = {}
    for name, r in resources.items():
        for u in r.spec.instance_uuids if r.spec else ():
            if u in owner:
                raise exception.InvalidRequest(
                    f"resources.{name}.spec.instance_uuids: {u} is "
                    f"also an instance of {owner[u]!r}")
            owner[u] = name
    return owner


def _check_hints(resources: dict[str, Resource],
                 owner: dict[str, str]) -> None:
    """No ``same_host`` / ``different_host`` hint names an instance of the
    stack (``owner``: consumer uuid -> resource). A hint finds its
    instances' hosts in the claims, and the stack's own hold none while it
    is planned: such a different_host hint would be ignored (the two on one
    host) and a same_host one leave no host. The stack's relations say it.
    """
    for name, r in resources.items():
        for hint in HOST_HINTS if r.spec else ():
            for u in r.spec.hinted_uuids(hint):
                if u in owner:
                    raise exception.InvalidRequest(
                        f"resources.{name}.spec.scheduler_hints."
                        f"{hint}: {u} is an instance of resource "
                        f"{owner[u]!r} of this stack (relate the two "
                        f"resources with {hint} instead)")


def _check_groups(resources: dict[str, Resource]) -> None:
    """Resources naming one server group must agree on its policy: the
    claim keeps one rule per group."""
    seen: dict[str, tuple[str, tuple]] = {}
    for name, r in resources.items():
        group = r.spec.instance_group if r.spec else None
        if group is None or not group.uuid:
            continue
        rule = (group.policy, group.max_server_per_host)
        first = seen.setdefault(group.uuid, (name, rule))
        if first[1] != rule:
            raise exception.InvalidRequest(
                f"resources.{name}.spec.instance_group: server group "
                f"{group.uuid} has another policy or rules in resource "
                f"{first[0]!r}")


def _definition(stack_id: str, project_id: str | None, user_id: str | None,
                resources: dict[str, Resource]) -> str:
    primitives: dict[str, dict] = {}

    def primitive(spec: RequestSpec) -> dict:
        # Specs equal but for their consumers share one primitive.
        key = repr(dataclasses.replace(spec, instance_uuids=()))
        if key not in primitives:
            primitives[key] = spec.to_primitive()
        return {**primitives[key],
                "instance_uuids": list(spec.instance_uuids)}

    doc = {"stack_id": stack_id, "project_id": project_id,
           "user_id": user_id, "resources": {
               name: {"spec": primitive(r.spec) if r.spec else None,
                      "depends_on": list(r.depends_on),
                      "same_host": list(r.same_host),
                      "different_host": list(r.different_host)}
               for name, r in resources.items()}}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))
