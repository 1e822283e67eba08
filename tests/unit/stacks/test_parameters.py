"""A template's parameters as Heat reads them: list and json given as
text, and constraints."""
import pytest

from scheduler import exception
from tests.unit.stacks.conftest import stack_request


_ZONES = """
heat_template_version: 2018-08-31
parameters:
  zones: {type: comma_delimited_list, default: "az1, az2"}
  hints: {type: json, default: '{"web": "10.0.0.1"}'}
resources:
  web:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      availability_zone: {get_param: [zones, 1]}
      scheduler_hints:
        build_near_host_ip: {get_param: [hints, web]}
"""


@pytest.mark.parametrize("given, zone, near", [
    ({}, "az2", "10.0.0.1"),
    ({"zones": "az3,az4"}, "az4", "10.0.0.1"),
    ({"hints": '{"web": "10.0.0.9"}'}, "az2", "10.0.0.9"),
])
def test_list_and_json_parameters_given_as_text_are_parsed_as_heat_does(
        given, zone, near):
    # Heat reads a comma_delimited_list or json parameter's text (its
    # default or the value given) as the list or mapping it writes; the
    # text was kept, so a path into it was refused ("no 1 in 'az1, az2'").
    spec = stack_request(_ZONES, parameters=given)["resources"]["web"]["spec"]
    assert spec["availability_zone"] == zone
    assert spec["scheduler_hints"] == {"build_near_host_ip": near}


def test_a_json_parameter_that_is_not_json_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_ZONES, parameters={"hints": "{web"})
    assert e.value.message.startswith("parameters.hints: not JSON"), \
        e.value.message


_CONSTRAINED = """
heat_template_version: 2018-08-31
parameters:
  size:
    type: string
    default: m1.small
    constraints:
      - allowed_values: [m1.small, m1.medium]
  name:
    type: string
    default: web
    constraints:
      - length: {min: 2, max: 8}
      - allowed_pattern: "[a-z]+"
  replicas:
    type: number
    default: 2
    constraints:
      - range: {min: 1, max: 3}
resources:
  web:
    type: OS::Nova::Server
    properties: {flavor: {get_param: size}, name: {get_param: name}}
"""


@pytest.mark.parametrize("given, message", [
    ({"size": "m1.xlarge"}, "parameters.size: 'm1.xlarge' is not one of "
                            "the allowed_values ['m1.small', 'm1.medium']"),
    ({"name": "w"}, "parameters.name: length 1 is not within length "
                    "{'min': 2, 'max': 8}"),
    ({"name": "web-1"}, "parameters.name: 'web-1' does not match "
                        "allowed_pattern '[a-z]+'"),
    ({"replicas": "4"}, "parameters.replicas: 4 is not within range "
                        "{'min': 1, 'max': 3}"),
])
def test_a_parameter_outside_its_constraints_is_refused_as_heat_does(
        given, message):
    # Heat refuses the stack; it was placed (m1.xlarge claimed where the
    # template allows at most m1.medium).
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_CONSTRAINED, parameters=given)
    assert e.value.message == message


def test_a_parameter_within_its_constraints_is_taken():
    raw = stack_request(_CONSTRAINED,
                        parameters={"size": "m1.medium", "name": "db",
                                    "replicas": "3"})
    assert raw["resources"]["web"]["spec"]["flavor"]["name"] == "m1.medium"
