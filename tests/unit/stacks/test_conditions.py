"""A template's conditions: resources placed or not, depends_on on a
resource not placed, and the if function."""
import pytest

from scheduler import exception
from scheduler.stacks.stack import Stack
from tests.unit.stacks.conftest import stack_request


_CONDITIONAL = """
heat_template_version: 2018-08-31
parameters:
  env: {type: string, default: dev}
conditions:
  is_prod: {equals: [{get_param: env}, prod]}
resources:
  web:
    type: OS::Nova::Server
    properties: {flavor: m1.tiny}
  standby:
    type: OS::Nova::Server
    condition: is_prod
    properties:
      flavor: m1.large
      scheduler_hints: {different_host: {get_resource: web}}
  spare:
    type: OS::Nova::Server
    condition: {not: is_prod}
    properties: {flavor: m1.small}
"""


@pytest.mark.parametrize("env, placed", [
    ("dev", ["spare", "web"]),
    ("prod", ["standby", "web"]),
])
def test_a_resource_whose_condition_is_false_is_not_placed(env, placed):
    # Heat does not create a resource whose condition is false; it was
    # placed (and claimed) all the same.
    raw = stack_request(_CONDITIONAL, parameters={"env": env})
    assert sorted(raw["resources"]) == placed
    assert sorted(Stack.from_primitives(raw).placed) == placed


@pytest.mark.parametrize("env, order", [
    ("dev", [["spare", "web"], ["after"]]),
    ("prod", [["web"], ["standby"], ["after"]]),
])
def test_depends_on_a_resource_whose_condition_is_false_is_dropped(env,
                                                                   order):
    # Heat allows dependencies on a resource defined under a condition
    # (rsrc_defn.dependencies: "conditionally defined, allow dependencies
    # on it"); with the condition false it was refused, "no resource
    # named 'standby'".
    text = _CONDITIONAL + """  after:
    type: OS::Nova::Server
    depends_on: [standby, spare, web]
    properties: {flavor: m1.tiny}
"""
    raw = stack_request(text, parameters={"env": env})
    assert Stack.from_primitives(raw).order == order


def test_an_unknown_condition_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_CONDITIONAL.replace("condition: is_prod",
                                           "condition: is_big"))
    assert e.value.message.startswith(
        "resources.standby.condition: no condition 'is_big'"), \
        e.value.message


def test_the_if_function_picks_by_its_condition():
    # Heat's {if: [condition, when true, when false]}: the flavor was
    # refused ("expected a flavor name") and the zone sent as the mapping.
    text = _CONDITIONAL.replace(
        "properties: {flavor: m1.tiny}",
        "properties:\n      flavor: {if: [is_prod, m1.large, m1.tiny]}\n"
        "      availability_zone: {if: [{not: is_prod}, az-dev, "
        "{get_param: env}]}")
    for env, memory_mb, zone in (("dev", 512, "az-dev"),
                                 ("prod", 8192, "prod")):
        spec = stack_request(text, parameters={"env": env})[
            "resources"]["web"]["spec"]
        assert (spec["flavor"]["memory_mb"], spec["availability_zone"]) \
            == (memory_mb, zone)


def test_conditions_naming_conditions_too_deep_are_refused():
    # c0 names c1 ... names c2000: flat YAML, but a RecursionError as
    # each name was followed.
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(
            "heat_template_version: 2018-08-31\nconditions:\n" + "".join(
                f"  c{i}: c{i + 1}\n" for i in range(2000))
            + "  c2000: true\nresources:\n  web:\n"
            "    type: OS::Nova::Server\n    condition: c0\n"
            "    properties: {flavor: m1.tiny}\n")
    assert e.value.message == "conditions.c100: nested more than 100 deep"
