"""The request at the edge: the one JSON schema a ``spec`` must satisfy.

:func:`validate` checks a ``spec`` dict (the current shape, or nova 4.0's
pair after ``request.legacy``) against :data:`SCHEMA` and raises an
``InvalidRequest`` naming the first offending field; a fast path takes
plain requests without walking the schema. :func:`check_depth` is the
one nesting limit of every argument at the edge (select_stack's and
nova's too), checked before anything walks the value. The free-form maps
(extra specs, image properties, hints) are bounded per key and value and
in all (:func:`check_text_size`, which select_stack applies to a whole
stack). :func:`describe` words a schema error briefly (select_stack's
schema uses it too); :func:`check_utf8` refuses text no database column
can store.
"""
from __future__ import annotations

from typing import Any

import jsonschema

from scheduler import exception
from scheduler.request.names import is_uuid
from scheduler.request.names import UUID_PATTERN

MAX_LIST = 1000          # hosts, uuids, members: more is a mistake or abuse
MAX_STR = 255
#: Containers nested in one argument, itself the first: a spec's own
#: structure takes 3 and nova's primitives a dozen; the json_filter's
#: query hint may nest 32 lists. Deeper, code that walks a value
#: recursively (``dataclasses.asdict``, ``repr``, ``json.dumps``) runs out
#: of stack: a RecursionError and its 3,000-line traceback per call.
MAX_DEPTH = 64
#: One value (a string, or a string in a hint's list) of a flavor's extra
#: spec, an image property or a scheduler hint: glance stores a property in
#: a TEXT column (65,535 bytes); nova's API takes extra-spec values of 255.
MAX_VALUE = 65535
#: The keys and values of one of those maps together, in characters (each
#: other scalar or list counts one): nova's API refuses a body over 112 KiB;
#: a 10 MB hint was placed and stored, and kept a worker larger.
MAX_MAP_TEXT = 1024 * 1024
POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")

_STR = {"type": "string", "maxLength": MAX_STR}
_OPT_STR = {"type": ["string", "null"], "maxLength": MAX_STR}
_UUID = {"type": "string", "pattern": UUID_PATTERN}
_SIZE = {"type": "integer", "minimum": 0, "maximum": 2 ** 31 - 1}
_HOSTS = {"type": "array", "items": _STR, "maxItems": MAX_LIST}
_KEY = {"maxLength": MAX_STR}
_STR_MAP = {"type": "object", "maxProperties": MAX_LIST,
            "propertyNames": _KEY,
            "additionalProperties": {"type": ["string", "number", "boolean",
                                              "null"],
                                     "maxLength": MAX_VALUE}}
#: A hint's value is free-form (JsonFilter's query may be a nested list):
#: its top level is bounded here, all of it by MAX_MAP_TEXT.
_HINT = {"maxLength": MAX_VALUE, "maxItems": MAX_LIST,
         "maxProperties": MAX_LIST, "items": {"maxLength": MAX_VALUE}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "instance_uuids": {"type": "array", "items": _UUID, "minItems": 1,
                           "maxItems": MAX_LIST, "uniqueItems": True},
        "num_instances": {"type": "integer", "minimum": 1,
                          "maximum": MAX_LIST},
        "project_id": _OPT_STR,
        "user_id": _OPT_STR,
        "flavor": {
            "type": "object",
            "additionalProperties": False,
            "required": ["memory_mb", "vcpus", "root_gb"],
            "properties": {
                "name": _OPT_STR,
                "flavorid": {"type": ["string", "integer", "null"],
                             "maxLength": MAX_STR},
                "memory_mb": _SIZE, "vcpus": _SIZE, "root_gb": _SIZE,
                "ephemeral_gb": _SIZE, "swap": _SIZE,
                "extra_specs": _STR_MAP,
            },
        },
        "image": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {"id": _OPT_STR, "name": _OPT_STR,
                           "properties": _STR_MAP},
        },
        "availability_zone": _OPT_STR,
        "ignore_hosts": _HOSTS,
        "force_hosts": _HOSTS,
        "force_nodes": _HOSTS,
        "requested_destination": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {"host": _OPT_STR, "node": _OPT_STR,
                           "aggregates": {"type": ["array", "null"],
                                          "items": _STR,
                                          "maxItems": MAX_LIST}},
        },
        "scheduler_hints": {"type": ["object", "null"],
                            "maxProperties": 100, "propertyNames": _KEY,
                            "additionalProperties": _HINT},
        "instance_group": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["policies"],
            "properties": {
                "uuid": _UUID,
                "policies": {"type": "array", "minItems": 1, "maxItems": 1,
                             "items": {"enum": list(POLICIES)}},
                "hosts": _HOSTS,
                "members": {"type": "array", "items": _UUID,
                            "maxItems": MAX_LIST},
                "rules": {
                    "type": ["object", "null"],
                    "additionalProperties": False,
                    "properties": {"max_server_per_host": {
                        "type": "integer", "minimum": 1,
                        "maximum": MAX_LIST}},
                },
            },
        },
        "retry": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {
                "exc": {"type": ["string", "null"], "maxLength": 4096},
                "num_attempts": {"type": "integer", "minimum": 0},
                "hosts": {"type": "array", "maxItems": MAX_LIST,
                          "items": {"type": "array", "minItems": 2,
                                    "maxItems": 2,
                                    "items": _OPT_STR}},
            },
        },
        "return_alternates": {"type": "boolean"},
        "move": {"type": "boolean"},
    },
    "required": ["flavor"],
}
#: "integer" is an int, as the fast path and the code after it assume:
#: jsonschema's own also takes 2.0 (and True is never one).
_Validator = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: type(v) is int))
_VALIDATOR = _Validator(SCHEMA)


# -- the fast path ------------------------------------------------------
# jsonschema walks SCHEMA for every request (a few % of a worker's CPU at
# full load). Typical requests use a handful of fields with plain values:
# these checks accept such a spec only where SCHEMA certainly does (never
# the other way round), and anything they do not recognise goes through
# jsonschema, which alone words the errors. ``tests/unit/
# request/test_schema.py`` checks that "fast says valid" implies "schema says
# valid" over valid and broken specs.

def _size_ok(v: Any) -> bool:
    return type(v) is int and 0 <= v <= 2 ** 31 - 1


def check_utf8(where: str, value: str | None) -> None:
    """:raises InvalidRequest: naming ``where``, if ``value`` holds a lone
    surrogate or a NUL: JSON lets both through (``"\\ud800"``,
    ``"\\u0000"``); neither a database column (PostgreSQL takes no NUL in
    text) nor a uuid derived from it can take a surrogate."""
    if value is None:
        return
    if "\x00" in value:
        raise exception.InvalidRequest(
            f"{where}: {value[:60]!r} is not storable text (it holds a NUL "
            f"character)")
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise exception.InvalidRequest(
            f"{where}: {value[:60]!r} is not valid unicode (it holds a lone "
            f"surrogate)") from None


#: What :func:`check_depth` counts as a level.
_NESTED = frozenset((dict, list, tuple))


def check_depth(value: Any, where: str, limit: int = MAX_DEPTH) -> None:
    """The one nesting rule of the edge: ``value`` (the argument or field
    named ``where``) nests at most ``limit`` dicts and lists (tuples, in
    process), itself the first. Checked before anything else reads it. A
    container is walked once per path to it: JSON decodes to a tree (a
    simple cycle, an in-process caller's, ends as too deep).

    :raises InvalidRequest: naming ``where`` and the next two keys toward
        the deepest part, e.g. ``spec.scheduler_hints.h...: nested deeper
        than the 64 levels allowed``.
    """
    # Level by level, not recursively: the check must not itself run out
    # of stack on what it refuses. Every request pays it: exact types,
    # all JSON decodes to, are cheaper to test than isinstance.
    level = [value] if type(value) in _NESTED else []
    for _ in range(limit):
        level = [v for c in level
                 for v in (c.values() if type(c) is dict else c)
                 if type(v) in _NESTED]
        if not level:
            return
    raise exception.InvalidRequest(
        f"{where}{_toward(value, limit)}: nested deeper than the {limit} "
        f"levels allowed")


def _toward(value: Any, limit: int, shown: int = 2) -> str:
    """The first ``shown`` keys (or list indexes) of a path down ``value``
    to a container ``limit`` levels below it, ``...`` if it goes on."""
    # Depth first, by an explicit stack that stops ``limit`` levels down,
    # so this ends even on a cycle.
    todo: list[tuple[Any, int, tuple]] = [(value, 0, ())]
    while todo:
        node, depth, path = todo.pop()
        if depth == limit:
            break
        items = node.items() if type(node) is dict else enumerate(node)
        todo.extend((v, depth + 1, (*path, k)[:shown + 1])
                    for k, v in items if type(v) in _NESTED)
    keys = "".join(f".{str(k)[:60]}" for k in path[:shown])
    return keys + ("..." if len(path) > shown else "")


def _opt_str_ok(v: Any) -> bool:
    return v is None or (type(v) is str and len(v) <= MAX_STR)


def _hosts_ok(v: Any) -> bool:
    return type(v) is list and len(v) <= MAX_LIST and all(
        type(h) is str and len(h) <= MAX_STR for h in v)


def _str_map_ok(v: Any) -> bool:
    return type(v) is dict and len(v) <= MAX_LIST and all(
        type(k) is str and len(k) <= MAX_STR and (
            x is None or type(x) in (int, float, bool)
            or (type(x) is str and len(x) <= MAX_VALUE))
        for k, x in v.items())


def _hint_ok(v: Any) -> bool:
    return (v is None or type(v) in (int, float, bool)
            or (type(v) is str and len(v) <= MAX_VALUE)
            or (type(v) is list and len(v) <= MAX_LIST and all(
                type(x) is str and len(x) <= MAX_VALUE for x in v)))


def _hints_ok(v: Any) -> bool:
    return v is None or (type(v) is dict and len(v) <= 100 and all(
        type(k) is str and len(k) <= MAX_STR and _hint_ok(x)
        for k, x in v.items()))


_FLAVOR_FIELDS: dict[str, Any] = {
    "name": _opt_str_ok, "memory_mb": _size_ok, "vcpus": _size_ok,
    "root_gb": _size_ok, "ephemeral_gb": _size_ok, "swap": _size_ok,
    "extra_specs": _str_map_ok,
    "flavorid": lambda v: v is None or (type(v) is int) or (
        type(v) is str and len(v) <= MAX_STR)}


def _flavor_ok(v: Any) -> bool:
    return (type(v) is dict and "memory_mb" in v and "vcpus" in v
            and "root_gb" in v and all(
                k in _FLAVOR_FIELDS and _FLAVOR_FIELDS[k](x)
                for k, x in v.items()))


def _uuids_ok(v: Any) -> bool:
    return (type(v) is list and 1 <= len(v) <= MAX_LIST
            and all(is_uuid(u) for u in v)
            and len(set(v)) == len(v))


_FAST_FIELDS: dict[str, Any] = {
    "flavor": _flavor_ok,
    "instance_uuids": _uuids_ok,
    "num_instances": lambda v: type(v) is int and 1 <= v <= MAX_LIST,
    "project_id": _opt_str_ok, "user_id": _opt_str_ok,
    "availability_zone": _opt_str_ok,
    "ignore_hosts": _hosts_ok, "force_hosts": _hosts_ok,
    "force_nodes": _hosts_ok,
    "scheduler_hints": _hints_ok,
    "image": lambda v: v is None or (type(v) is dict and all(
        (k in ("id", "name") and _opt_str_ok(x))
        or (k == "properties" and _str_map_ok(x)) for k, x in v.items())),
    "return_alternates": lambda v: type(v) is bool,
    "move": lambda v: type(v) is bool,
}


def _surely_valid(spec: dict) -> bool:
    """True only if ``spec`` satisfies SCHEMA; False means "ask
    jsonschema", not "invalid"."""
    return "flavor" in spec and all(
        k in _FAST_FIELDS and _FAST_FIELDS[k](v) for k, v in spec.items())


def validate(spec: Any) -> None:
    """Check a ``spec`` dict against :data:`SCHEMA`, its nesting first
    (:func:`check_depth`).

    :raises InvalidRequest: naming the first offending field, e.g.
        ``spec.flavor.memory_mb: -1 is less than the minimum of 0``.
    """
    if not isinstance(spec, dict):
        raise exception.InvalidRequest(
            f"spec: expected an object, got {type(spec).__name__}")
    # First: a schema error words the value, as deep as it is.
    check_depth(spec, "spec")
    error = None if _surely_valid(spec) else \
        jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(spec))
    if error is not None:
        path = ".".join(["spec", *(str(p)[:60]
                                   for p in error.absolute_path)])
        raise exception.InvalidRequest(f"{path}: {describe(error)}")
    extra_specs = spec["flavor"].get("extra_specs")
    if extra_specs:
        check_text_size("spec.flavor.extra_specs", extra_specs, MAX_MAP_TEXT)
    properties = (spec.get("image") or {}).get("properties")
    if properties:
        check_text_size("spec.image.properties", properties, MAX_MAP_TEXT)
    hints = spec.get("scheduler_hints")
    if hints:
        check_text_size("spec.scheduler_hints", hints, MAX_MAP_TEXT)


def check_text_size(where: str, value: Any, limit: int) -> None:
    """:raises InvalidRequest: naming ``where``, if the keys and strings in
    ``value`` (a JSON value) hold more than ``limit`` characters in all;
    every other scalar, list and object counts one.

    Walks without recursion and stops once past ``limit``, so neither deep
    nesting nor a huge value costs more than ``limit`` steps.
    """
    left = limit
    todo = [value]
    pop, extend = todo.pop, todo.extend
    while todo:
        item = pop()
        kind = type(item)
        if kind is str:
            left -= len(item)
        elif kind is dict or isinstance(item, dict):
            left -= 1 + sum(len(k) if type(k) is str else 1 for k in item)
            extend(item.values())
        elif kind is list or isinstance(item, (list, tuple)):
            left -= 1
            extend(item)
        else:
            left -= 1
        if left < 0:
            raise exception.InvalidRequest(
                f"{where}: its keys and values are longer than {limit} "
                f"characters in all")


def describe(error: jsonschema.ValidationError) -> str:
    """A short reason: jsonschema's own messages repeat the offending value,
    which for an oversized list would flood the reply and the log."""
    value = error.instance
    if error.validator in ("maxItems", "minItems") and isinstance(value, list):
        bound = "at most" if error.validator == "maxItems" else "at least"
        return f"has {len(value)} items, {bound} {error.validator_value} allowed"
    if error.validator == "maxProperties" and isinstance(value, dict):
        return (f"has {len(value)} keys, at most {error.validator_value} "
                f"allowed")
    if error.validator == "maxLength" and isinstance(value, str):
        # propertyNames checks a key; the path names its object.
        subject = "a key is" if "propertyNames" in error.schema_path else "is"
        return (f"{subject} {len(value)} characters long, at most "
                f"{error.validator_value} allowed")
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."
