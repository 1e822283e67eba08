"""Heat's functions in a template's values: get_attr and get_resource as
dependencies, get_param with a path."""
import pytest

from scheduler import exception
from scheduler.stacks.stack import Stack
from tests.unit.stacks.conftest import stack_request


def test_get_attr_is_a_dependency_as_in_heat():
    # Heat creates a resource after every resource whose attribute it
    # reads (the port's address is known once the port exists).
    raw = stack_request("heat_template_version: 2018-08-31\nresources:\n"
                        "  port: {type: OS::Neutron::Port}\n"
                        "  ip: {type: OS::Neutron::FloatingIP, properties: "
                        "{port_id: {get_attr: [port, show, id]}}}\n"
                        "  web:\n    type: OS::Nova::Server\n"
                        "    properties:\n      flavor: m1.tiny\n"
                        "      user_data: {str_replace: {template: 'ip=$ip', "
                        "params: {$ip: {get_attr: "
                        "[ip, floating_ip_address]}}}}\n")
    assert raw["resources"]["web"]["depends_on"] == ["ip"]
    assert raw["resources"]["ip"]["depends_on"] == ["port"]
    assert Stack.from_primitives(raw).order == [["port"], ["ip"], ["web"]]


def test_get_attr_of_an_unknown_resource_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request("heat_template_version: 2018-08-31\nresources:\n"
                      "  web:\n    type: OS::Nova::Server\n"
                      "    properties: {flavor: m1.tiny, user_data: "
                      "{get_attr: [nope, first_address]}}\n")
    assert e.value.message == ("resources.web.properties.user_data: "
                               "get_attr 'nope': no such resource")


@pytest.mark.parametrize("arg, message", [
    ("port", "get_attr: expected [resource, attribute, ...], got 'port'"),
    ("[7, id]", "get_attr: expected a resource name first, got '7'"),
    ("[nope, id]", "get_attr 'nope': no such resource"),
])
def test_a_get_attr_needs_a_list_naming_a_resource_first(arg, message):
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request("heat_template_version: 2018-08-31\nresources:\n"
                      "  port: {type: OS::Neutron::Port}\n"
                      "  web:\n    type: OS::Nova::Server\n"
                      f"    properties: {{flavor: m1.tiny, user_data: "
                      f"{{get_attr: {arg}}}}}\n")
    assert e.value.message == "resources.web.properties.user_data: " + message


_SIZES = ("heat_template_version: 2018-08-31\n"
          "parameters:\n  sizes:\n    type: json\n"
          "    default: {web: m1.small, tiers: [m1.tiny, m1.large]}\n"
          "resources:\n  web:\n    type: OS::Nova::Server\n"
          "    properties: {flavor: {get_param: %s}}\n")


def test_get_param_with_a_path_follows_it_as_heat_does():
    # [name, key, index, ...]: the flavor was the whole parameter.
    for path, memory_mb in (("[sizes, web]", 2048),
                            ("[sizes, tiers, 1]", 8192)):
        raw = stack_request(_SIZES % path)
        assert raw["resources"]["web"]["spec"]["flavor"]["memory_mb"] == \
            memory_mb


def test_get_param_with_a_path_that_is_not_there_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_SIZES % "[sizes, db]")
    assert e.value.message.startswith(
        "resources.web.properties.flavor: get_param 'sizes': no 'db' in ")
