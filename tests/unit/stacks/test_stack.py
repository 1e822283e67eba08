"""The select_stack request: validation, references, consumers."""
import pytest

from scheduler import exception
from scheduler.stacks import ids
from scheduler.stacks import stack as stacks
from tests.unit.fakes import nested
from tests.unit.fakes import spec_dict

SID = "5a0b0c0d-0000-4000-8000-000000000001"


def _stack(**resources):
    return {"stack_id": SID, "project_id": "p1", "resources": resources}


def test_order_comes_from_depends_on_and_relations():
    s = stacks.Stack.from_primitives(_stack(
        net={"spec": None},
        db={"spec": spec_dict(), "depends_on": ["net"]},
        web={"spec": spec_dict(num_instances=2), "different_host": ["db"]}))
    assert s.order == [["net"], ["db"], ["web"]]
    assert list(s.placed) == ["db", "web"]


def test_the_stack_project_is_the_specs_unless_they_say():
    spec = spec_dict()
    del spec["project_id"]
    s = stacks.Stack.from_primitives(_stack(a={"spec": spec},
                                            b={"spec": spec_dict()}))
    assert s.resources["a"].spec.project_id == "p1"


@pytest.mark.parametrize("raw, message", [
    (_stack(a={"spec": spec_dict(), "depends_on": ["nope"]}),
     "resources.a.depends_on: no resource named 'nope'"),
    (_stack(a={"spec": spec_dict(), "different_host": ["a"]}),
     "resources.a.different_host: a resource cannot name itself"),
    (_stack(a={"spec": spec_dict(), "same_host": ["n"]}, n={"spec": None}),
     "resources.a.same_host: 'n' and 'a' must both be placed"),
    (_stack(a={"spec": spec_dict(flavor={"vcpus": -1})}),
     "resources.a.spec.flavor.vcpus: -1 is less than the minimum"),
    (_stack(a={"spec": spec_dict(), "colour": "red"}),
     "resources.a: Additional properties are not allowed"),
    ({"stack_id": "not-a-uuid", "resources": {"a": {"spec": None}}},
     "stack_id: expected a uuid (32 hex digits, dashes optional), "
     "got 'not-a-uuid'"),
    ({"stack_id": SID, "resources": {}},
     "resources: {} should be non-empty"),
    (_stack(a={"spec": spec_dict(), "depends_on": ["b"]},
            b={"spec": None, "depends_on": ["a"]}),
     "depends_on cycle: a -> b -> a"),
    (_stack(a={"spec": spec_dict(), "different_host": ["b"]},
            b={"spec": spec_dict(), "different_host": ["a"]}),
     "different_host cycle: a -> b -> a (a relation orders"),
    (_stack(a={"spec": spec_dict(), "same_host": ["b"],
               "different_host": ["b"]}, b={"spec": spec_dict()}),
     "resources.a: 'b' is both in same_host and in different_host"),
])
def test_bad_stacks_are_refused_naming_the_field(raw, message):
    with pytest.raises(exception.InvalidRequest) as e:
        stacks.Stack.from_primitives(raw)
    assert e.value.message.startswith(message), e.value.message


def test_a_consumer_in_two_resources_is_refused():
    u = "aaaaaaaa-0000-4000-8000-000000000001"
    with pytest.raises(exception.InvalidRequest,
                       match=r"resources.b.spec.instance_uuids: .* is "
                             r"also an instance of 'a'"):
        stacks.Stack.from_primitives(_stack(
            a={"spec": spec_dict(instance_uuids=[u])},
            b={"spec": spec_dict(instance_uuids=[u])}))


@pytest.mark.parametrize("hint", ["same_host", "different_host"])
def test_a_hint_naming_an_instance_of_the_stack_is_refused(hint):
    """The hints resolve instances from the claims, which a stack's own
    instances do not hold while it is planned: a different_host hint on one
    was ignored (both servers on one host), a same_host one left no host.
    Between resources of the stack the relations say it."""
    u = "aaaaaaaa-0000-4000-8000-000000000001"
    derived = ids.consumer_uuid(SID, "b", 1)
    for named, owner in ((u, "a"), (derived.upper(), "b")):
        with pytest.raises(exception.InvalidRequest) as e:
            stacks.Stack.from_primitives(_stack(
                a={"spec": spec_dict(instance_uuids=[u])},
                b={"spec": spec_dict(num_instances=2)},
                c={"spec": spec_dict(scheduler_hints={hint: [named]})}))
        assert e.value.message == (
            f"resources.c.spec.scheduler_hints.{hint}: "
            f"{named.lower()} is an instance of resource {owner!r} of this "
            f"stack (relate the two resources with {hint} instead)")


def test_too_many_instances_in_all_are_refused():
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources: 6 instances in all, at "
                             r"most 5 allowed"):
        stacks.Stack.from_primitives(_stack(
            a={"spec": spec_dict(num_instances=3)},
            b={"spec": spec_dict(num_instances=3)}), max_instances=5)


def test_one_group_with_two_policies_is_refused():
    g = "eeeeeeee-0000-4000-8000-000000000001"
    with pytest.raises(exception.InvalidRequest,
                       match="resources.b.spec.instance_group: server group"):
        stacks.Stack.from_primitives(_stack(
            a={"spec": spec_dict(instance_group={
                "uuid": g, "policies": ["anti-affinity"]})},
            b={"spec": spec_dict(instance_group={
                "uuid": g, "policies": ["affinity"]})}))


def test_a_reference_that_is_not_a_name_is_refused():
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources.a.depends_on: \"{'x': 1}\" "
                             r"is not a resource name"):
        stacks.Stack.from_primitives(_stack(
            a={"spec": spec_dict(), "depends_on": [{"x": 1}]}))


def test_a_huge_stack_is_refused_before_making_its_consumers(
        monkeypatch):
    # 1,000 resources of 1,000 instances: refusing it took seconds of the
    # scheduler's CPU, validating every spec (each makes its instances'
    # uuids) and deriving a million consumer uuids first.
    made = []
    parse = stacks.RequestSpec.from_primitives
    monkeypatch.setattr(stacks.RequestSpec, "from_primitives",
                        lambda *args: made.append(args) or parse(*args))
    monkeypatch.setattr(ids, "consumer_uuid",
                        lambda *args: made.append(args))
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources: 1000000 instances in all, "
                             r"at most 1000 allowed"):
        stacks.Stack.from_primitives(_stack(**{
            f"r{i:03d}": {"spec": spec_dict(
                num_instances=1000, image={"id": None,
                                           "properties": {"i": str(i)}})}
            for i in range(1000)}))
    assert len(made) == 2       # r000 and r001, which is one too many


def test_a_name_utf8_cannot_carry_is_refused_naming_the_field():
    # What json.loads makes of "\ud800": deriving the consumer uuids
    # failed with a UnicodeEncodeError.
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources: 'web\\ud800' is not valid "
                             r"unicode"):
        stacks.Stack.from_primitives(_stack(
            **{"web\ud800": {"spec": spec_dict()}}))


@pytest.mark.parametrize("container", [dict, list])
def test_a_hint_nested_too_deep_is_refused_before_it_is_read(container):
    """500 levels deep, a hint made select_stack fail with a bare
    RecursionError (dataclasses.asdict, building the definition), its
    traceback 3,000 lines in the log; 400 passed."""
    raw = _stack(web={"spec": spec_dict(
        scheduler_hints={"deep": nested(500, container)})})
    with pytest.raises(exception.InvalidRequest) as e:
        stacks.Stack.from_primitives(raw)
    assert e.value.message == (
        "resources.web.spec.scheduler_hints.deep...: nested deeper "
        "than the 64 levels allowed")


@pytest.mark.parametrize("raw, field", [
    (_stack(web={"spec": None, "depends_on": [nested(500)]}),
     "resources.web.depends_on"),
    ({**_stack(web={"spec": None}), "stack_id": nested(500)},
     "stack_id"),
    ({**_stack(web={"spec": None}), "extra": [nested(500)]}, "extra"),
    (_stack(web=nested(500)), "resources.web"),
])
def test_every_field_of_a_stack_has_the_one_nesting_limit(raw, field):
    """Not only the specs: the schema's error, or the reference check,
    would word the value, as deep as it is."""
    with pytest.raises(exception.InvalidRequest) as e:
        stacks.Stack.from_primitives(raw)
    assert e.value.message.startswith(f"{field}.")
    assert e.value.message.endswith(
        "...: nested deeper than the 64 levels allowed")


def test_a_stack_holding_too_much_text_is_refused():
    # Each spec within its own bounds, too much in all: the definition is
    # stored (a stack with three 10 MB hints kept 31 MB in its row).
    hints = {f"h{i}": "x" * 60000 for i in range(15)}
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources: its keys and values are "
                             rf"longer than {stacks.MAX_STACK_TEXT} "
                             r"characters in all$"):
        stacks.Stack.from_primitives(_stack(**{
            f"r{i}": {"spec": spec_dict(scheduler_hints=hints)}
            for i in range(5)}))
