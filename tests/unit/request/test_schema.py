"""The request schema at the edge: every refused field is named, the
fast path accepts only what the schema does, text a claim stores."""
from __future__ import annotations

import copy
import uuid

import pytest

from scheduler import exception
from scheduler.request import schema
from scheduler.request.schema import MAX_LIST
from scheduler.request.schema import MAX_MAP_TEXT
from scheduler.request.schema import MAX_STR
from scheduler.request.schema import MAX_VALUE
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import FLAVOR
from tests.unit.fakes import nested
from tests.unit.fakes import spec_dict

U1 = "11111111-1111-4111-8111-111111111111"


def _invalid(spec, **kw) -> str:
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_primitives(spec, **kw)
    return info.value.message


# --- every rejected field names itself ------------------------------------

def _with(path: str, value):
    """spec_dict with ``value`` at dotted ``path`` (``flavor.swap``)."""
    spec = spec_dict()
    keys = path.split(".")
    target = spec
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = value
    return spec


def _without(path: str):
    spec = spec_dict()
    keys = path.split(".")
    target = spec
    for key in keys[:-1]:
        target = target[key]
    del target[keys[-1]]
    return spec


REJECTED = [
    # (spec, field the message must start with, text the message contains)
    (_with("flavor.memory_mb", -1), "spec.flavor.memory_mb",
     "minimum"),
    (_with("flavor.memory_mb", "2048"), "spec.flavor.memory_mb",
     "integer"),
    (_with("flavor.memory_mb", 2 ** 31), "spec.flavor.memory_mb",
     "maximum"),
    (_with("flavor.vcpus", 1.5), "spec.flavor.vcpus", "integer"),
    (_with("flavor.vcpus", True), "spec.flavor.vcpus", "integer"),
    (_with("flavor.root_gb", -10), "spec.flavor.root_gb", "minimum"),
    (_with("flavor.ephemeral_gb", -1), "spec.flavor.ephemeral_gb",
     "minimum"),
    (_with("flavor.swap", -512), "spec.flavor.swap", "minimum"),
    (_with("flavor.swap", None), "spec.flavor.swap", "integer"),
    (_with("flavor.name", 7), "spec.flavor.name", "string"),
    (_with("flavor.name", "x" * 256), "spec.flavor.name",
     "256 characters long"),
    (_with("flavor.extra_specs", ["a"]), "spec.flavor.extra_specs",
     "object"),
    (_with("flavor.extra_specs", {"k": {"nested": 1}}),
     "spec.flavor.extra_specs.k", ""),
    (_with("flavor.disk", 10), "spec.flavor", "'disk'"),
    (_without("flavor.memory_mb"), "spec.flavor", "'memory_mb'"),
    (_without("flavor"), "spec", "'flavor'"),
    (_with("flavor", "m1.small"), "spec.flavor", "object"),
    (_with("bogus", 1), "spec", "'bogus'"),
    (_with("instance_uuids", []), "spec.instance_uuids",
     "has 0 items, at least 1 allowed"),
    (_with("instance_uuids", U1), "spec.instance_uuids", "array"),
    (_with("instance_uuids", ["not-a-uuid"]), "spec.instance_uuids.0",
     "does not match"),
    (_with("instance_uuids", [U1, U1]), "spec.instance_uuids",
     "non-unique"),
    (_with("instance_uuids",
           [str(uuid.UUID(int=i)) for i in range(MAX_LIST + 1)]),
     "spec.instance_uuids", f"has {MAX_LIST + 1} items, at most {MAX_LIST}"),
    (_with("num_instances", 0), "spec.num_instances", "minimum"),
    (_with("num_instances", "2"), "spec.num_instances", "integer"),
    # jsonschema's own "integer" takes 2.0; the code after it counts on int.
    (_with("num_instances", 2.0), "spec.num_instances", "integer"),
    (_with("flavor.memory_mb", 2048.0), "spec.flavor.memory_mb", "integer"),
    # A long key is named by its first characters.
    (_with("flavor.extra_specs", {"k" * MAX_STR: [1]}),
     "spec.flavor.extra_specs." + "k" * 60, ""),
    (_with("num_instances", MAX_LIST + 1), "spec.num_instances", "maximum"),
    (_with("project_id", ["p"]), "spec.project_id", ""),
    (_with("user_id", 3), "spec.user_id", ""),
    (_with("availability_zone", 5), "spec.availability_zone", ""),
    (_with("image", "cirros"), "spec.image", "object"),
    (_with("image", {"id": "i", "properties": {"p": [1]}}),
     "spec.image.properties.p", ""),
    (_with("ignore_hosts", "h1"), "spec.ignore_hosts", "array"),
    (_with("ignore_hosts", [1]), "spec.ignore_hosts.0", "string"),
    (_with("force_hosts", ["h"] * (MAX_LIST + 1)), "spec.force_hosts",
     f"has {MAX_LIST + 1} items, at most {MAX_LIST}"),
    (_with("force_nodes", ["n" * 256]), "spec.force_nodes.0",
     "is 256 characters long, at most 255"),
    (_with("requested_destination", "h1"), "spec.requested_destination",
     "object"),
    (_with("requested_destination", {"host": 1}),
     "spec.requested_destination.host", ""),
    (_with("requested_destination", {"cell": "c1"}),
     "spec.requested_destination", "'cell'"),
    (_with("requested_destination", {"aggregates": ["a"] * (MAX_LIST + 1)}),
     "spec.requested_destination.aggregates", "items"),
    (_with("scheduler_hints", ["group"]), "spec.scheduler_hints", "object"),
    (_with("scheduler_hints", {f"k{i}": i for i in range(101)}),
     "spec.scheduler_hints", "has 101 keys, at most 100"),
    (_with("instance_group", {"policies": ["best-effort"]}),
     "spec.instance_group.policies.0", "best-effort"),
    (_with("instance_group", {"policies": []}),
     "spec.instance_group.policies", "at least 1"),
    (_with("instance_group", {"policies": ["affinity", "anti-affinity"]}),
     "spec.instance_group.policies", "at most 1"),
    (_with("instance_group", {"hosts": []}), "spec.instance_group",
     "'policies'"),
    (_with("instance_group", {"policies": ["affinity"], "uuid": "g1"}),
     "spec.instance_group.uuid", ""),
    (_with("instance_group", {"policies": ["affinity"], "name": "g"}),
     "spec.instance_group", "'name'"),
    (_with("instance_group", {"policies": ["anti-affinity"],
                              "rules": {"max_server_per_host": 0}}),
     "spec.instance_group.rules.max_server_per_host", "0 is less than"),
    (_with("instance_group", {"policies": ["affinity"],
                              "members": ["m"] * (MAX_LIST + 1)}),
     "spec.instance_group.members", "items"),
    (_with("retry", {"num_attempts": -1}), "spec.retry.num_attempts",
     "minimum"),
    (_with("retry", {"hosts": [["h1"]]}), "spec.retry.hosts.0", ""),
    (_with("retry", {"hosts": "h1"}), "spec.retry.hosts", "array"),
    (_with("return_alternates", "yes"), "spec.return_alternates",
     "boolean"),
]


@pytest.mark.parametrize("spec,field,text", REJECTED,
                         ids=[f"{r[1]}-{i}" for i, r in enumerate(REJECTED)])
def test_rejected_field_is_named(spec, field, text):
    message = _invalid(spec)
    assert message.startswith(field + ": "), message
    assert text in message
    assert len(message) < 400, "the reason must not echo huge values"


@pytest.mark.parametrize("spec", [None, [], "spec", 3])
def test_spec_that_is_not_an_object_is_rejected(spec):
    assert _invalid(spec).startswith("spec: expected an object")


def test_every_policy_is_accepted():
    for policy in ("affinity", "anti-affinity", "soft-affinity",
                   "soft-anti-affinity"):
        spec = RequestSpec.from_primitives(
            spec_dict(instance_group={"policies": [policy]}))
        assert spec.instance_group.policy == policy


def test_limits_are_inclusive():
    spec = RequestSpec.from_primitives(spec_dict(
        flavor={"memory_mb": 0, "vcpus": 2 ** 31 - 1},
        force_hosts=["h"] * MAX_LIST, force_nodes=["n" * 255]))
    assert len(spec.force_hosts) == MAX_LIST


def test_unknown_keys_in_image_and_retry_are_refused():
    assert _invalid(spec_dict(image={"id": "i", "disk": "x"})).startswith(
        "spec.image: Additional properties are not allowed ('disk'")
    assert _invalid(spec_dict(retry={"hosts": [], "why": 1})).startswith(
        "spec.retry: Additional properties are not allowed ('why'")
    spec = RequestSpec.from_primitives(spec_dict(
        retry={"num_attempts": 1, "hosts": [], "exc": "boom"}))
    assert spec.retry["exc"] == "boom"


# -- the fast path must never accept what the schema refuses --------------

_ODD_VALUES = [None, True, False, 0, -1, 1, 2 ** 31, 2 ** 31 - 1, 1.0, 1.5,
               "", "x" * 256, "x", [], ["a"], ["x" * 256], [1], {},
               {"a": 1}, {"a": [1]}, str(uuid.uuid4()),
               [str(uuid.uuid4())], [str(uuid.uuid4())] * 2,
               [str(uuid.uuid4()) + "\n"], ["not-a-uuid"],
               ["h"] * (MAX_LIST + 1), {str(i): i for i in range(101)},
               {"k" * 256: 1}, {"a": "x" * 65536}, {"a": ["x" * 65536]},
               {"a": ["x", 1]}, {"a": [["x"]]}, {"a": {"b": 1}}]


def _mutations():
    """Valid specs, and each with one field (top level or in the flavor
    or image) replaced by an odd value, dropped, or added unknown."""
    base = spec_dict(num_instances=1,
                     instance_uuids=[str(uuid.uuid4())],
                     image={"id": "i", "name": None,
                            "properties": {"a": "b"}},
                     scheduler_hints={"x": 1}, force_hosts=["h"],
                     return_alternates=True, move=False)
    yield base
    yield {"flavor": dict(FLAVOR)}
    for key in [*schema._FAST_FIELDS, "unknown", "retry", "instance_group"]:
        for value in _ODD_VALUES:
            yield {**base, key: value}
        dropped = dict(base)
        dropped.pop(key, None)
        yield dropped
    for key in ["memory_mb", "vcpus", "root_gb", "swap", "name",
                "flavorid", "extra_specs", "unknown"]:
        for value in _ODD_VALUES:
            yield {**base, "flavor": {**base["flavor"], key: value}}
        flavor = dict(base["flavor"])
        flavor.pop(key, None)
        yield {**base, "flavor": flavor}
    for key in ["id", "name", "properties", "unknown"]:
        for value in _ODD_VALUES:
            yield {**base, "image": {**base["image"], key: value}}


def test_the_fast_path_accepts_only_what_the_schema_accepts():
    fast = 0
    for spec in _mutations():
        if schema._surely_valid(spec):
            fast += 1
            assert schema._VALIDATOR.is_valid(spec), spec
    # ... and it is taken by plain requests, or it would be no faster.
    assert schema._surely_valid(spec_dict())
    assert fast > 100


def test_errors_are_worded_the_same_with_and_without_the_fast_path(
        monkeypatch):
    def outcome(spec):
        try:
            RequestSpec.from_primitives(copy.deepcopy(spec))
        except exception.InvalidRequest as e:
            return str(e)
        return "ok"

    specs = list(_mutations())
    with_fast = [outcome(s) for s in specs]
    monkeypatch.setattr(schema, "_surely_valid", lambda spec: False)
    assert [outcome(s) for s in specs] == with_fast
    assert "ok" in with_fast and len(set(with_fast)) > 10


@pytest.mark.parametrize("field", ["project_id", "user_id"])
def test_a_lone_surrogate_in_what_a_claim_stores_is_named(field):
    """JSON decodes "\\ud800" to a string no database column takes: the
    claim failed with a traceback, after planning."""
    with pytest.raises(exception.InvalidRequest) as e:
        RequestSpec.from_primitives(spec_dict(**{field: "p\ud800"}))
    assert e.value.message == (
        f"spec.{field}: 'p\\ud800' is not valid unicode (it holds a lone "
        f"surrogate)")


@pytest.mark.parametrize("field", ["project_id", "user_id"])
def test_a_nul_in_what_a_claim_stores_is_named(field):
    """JSON decodes "\\u0000" to a string PostgreSQL's text columns refuse:
    the claim failed as if the database were away."""
    with pytest.raises(exception.InvalidRequest) as e:
        RequestSpec.from_primitives(spec_dict(**{field: "p\x00q"}))
    assert e.value.message == (
        f"spec.{field}: 'p\\x00q' is not storable text (it holds a NUL "
        f"character)")


# --- nesting: one limit, checked before anything walks the value ----------

def _hint_levels(levels: int, container: type = dict) -> dict:
    """A spec whose value nests ``levels`` containers deep in all, the
    spec and its scheduler_hints being the first two."""
    return spec_dict(scheduler_hints={"h": nested(levels - 2, container)})


@pytest.mark.parametrize("container", [dict, list])
def test_nesting_is_accepted_up_to_the_limit(container):
    spec = RequestSpec.from_primitives(
        _hint_levels(schema.MAX_DEPTH, container))
    assert "h" in spec.scheduler_hints
    assert spec.to_primitive()["scheduler_hints"]["h"]


@pytest.mark.parametrize("container", [dict, list])
@pytest.mark.parametrize("levels", [schema.MAX_DEPTH + 1, 500])
def test_nesting_deeper_is_refused_naming_the_field_and_limit(container,
                                                              levels):
    assert _invalid(_hint_levels(levels, container)) == (
        f"spec.scheduler_hints.h...: nested deeper than the "
        f"{schema.MAX_DEPTH} levels allowed")


@pytest.mark.parametrize("field", ["flavor.extra_specs.a",
                                   "image.properties.a", "retry.hosts",
                                   "bogus"])
def test_nesting_is_checked_in_every_field_before_the_schema(field):
    """Where the schema has a rule, its error would repeat the value (a
    repr as deep as it), so depth is checked first."""
    message = _invalid(_with(field, nested(500)))
    named = ".".join((field.split(".") + ["k"])[:2])    # two levels down
    assert message == (f"spec.{named}...: nested deeper than the "
                       f"{schema.MAX_DEPTH} levels allowed")


def test_the_depth_check_does_not_recurse_itself():
    """Far deeper than the interpreter's recursion limit, or a cycle (an
    in-process caller's), it still answers with the limit."""
    with pytest.raises(exception.InvalidRequest, match="levels allowed"):
        schema.check_depth(nested(100_000), "x")
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(exception.InvalidRequest) as e:
        schema.check_depth({"a": cycle}, "x", limit=3)
    assert e.value.message == "x.a.0...: nested deeper than the 3 levels " \
                              "allowed"


def test_the_path_is_named_as_far_as_it_goes():
    schema.check_depth({"a": [1, {"b": 2}]}, "x", limit=3)
    with pytest.raises(exception.InvalidRequest) as e:
        schema.check_depth({"a": [1, {"b": []}]}, "x", limit=3)
    assert e.value.message == "x.a.1...: nested deeper than the 3 levels " \
                              "allowed"
    with pytest.raises(exception.InvalidRequest) as e:
        schema.check_depth({"a": {"b": {}}}, "x", limit=2)
    assert e.value.message == "x.a.b: nested deeper than the 2 levels " \
                              "allowed"


# -- the free-form maps are bounded --------------------------------------
# A stack with three 10 MB hints was placed and its 31 MB definition
# stored; nothing bounded a hint, an extra spec or an image property.

_BIG = "x" * (MAX_VALUE + 1)
_LONG = f"is {MAX_VALUE + 1} characters long, at most {MAX_VALUE} allowed"
_LONG_KEY = (f"a key is {MAX_STR + 1} characters long, at most {MAX_STR} "
             f"allowed")
OVERSIZED = [
    ({"scheduler_hints": {"foo": _BIG}}, f"spec.scheduler_hints.foo: {_LONG}"),
    ({"scheduler_hints": {"foo": ["a", _BIG]}},
     f"spec.scheduler_hints.foo.1: {_LONG}"),
    ({"scheduler_hints": {"foo": ["a"] * (MAX_LIST + 1)}},
     f"spec.scheduler_hints.foo: has {MAX_LIST + 1} items, at most "
     f"{MAX_LIST} allowed"),
    ({"scheduler_hints": {"k" * (MAX_STR + 1): "v"}},
     f"spec.scheduler_hints: {_LONG_KEY}"),
    ({"flavor": {**FLAVOR, "extra_specs": {"foo": _BIG}}},
     f"spec.flavor.extra_specs.foo: {_LONG}"),
    ({"flavor": {**FLAVOR, "extra_specs": {"k" * (MAX_STR + 1): "v"}}},
     f"spec.flavor.extra_specs: {_LONG_KEY}"),
    ({"image": {"properties": {"foo": _BIG}}},
     f"spec.image.properties.foo: {_LONG}"),
    ({"image": {"properties": {"k" * (MAX_STR + 1): "v"}}},
     f"spec.image.properties: {_LONG_KEY}"),
    # Values each within bounds, too much in all (nested hints too).
    ({"scheduler_hints": {"query": [["x" * MAX_VALUE] * 9] * 2}},
     f"spec.scheduler_hints: its keys and values are longer than "
     f"{MAX_MAP_TEXT} characters in all"),
    ({"flavor": {**FLAVOR, "extra_specs": {
        str(i): "x" * MAX_VALUE for i in range(17)}}},
     f"spec.flavor.extra_specs: its keys and values are longer than "
     f"{MAX_MAP_TEXT} characters in all"),
    ({"image": {"properties": {str(i): "x" * MAX_VALUE
                               for i in range(17)}}},
     f"spec.image.properties: its keys and values are longer than "
     f"{MAX_MAP_TEXT} characters in all"),
]


@pytest.mark.parametrize("fields,message", OVERSIZED,
                         ids=[m.split(":")[0] + f"-{i}"
                              for i, (_, m) in enumerate(OVERSIZED)])
def test_an_oversized_value_is_refused_naming_its_field(fields, message):
    assert _invalid(spec_dict(**fields)) == message


def test_value_bounds_are_inclusive():
    value = "x" * MAX_VALUE
    spec = RequestSpec.from_primitives(spec_dict(
        flavor={**FLAVOR, "extra_specs": {"k" * MAX_STR: value}},
        image={"properties": {"p": value}},
        scheduler_hints={"foo": value, "bar": [value] * 3}))
    assert spec.scheduler_hints["foo"] == value


def test_the_whole_map_bound_does_not_recurse():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(exception.InvalidRequest, match="in all"):
        schema.check_text_size("x", deep, 1000)
    schema.check_text_size("x", deep, 100_001)
