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


def _laughs(levels: int, fan: int, indent: str) -> str:
    """``x0`` .. ``x{levels}``, each ``fan`` aliases of the one before."""
    return "".join(
        [f"{indent}x0: &a0 [lol]\n"] + [
            f"{indent}x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan)
            + "]\n" for i in range(1, levels + 1)])


_LIMIT = ": expands to more than 262144 values (YAML aliases and " \
    "get_param repeat what they name)"


@pytest.mark.parametrize("resource, where", [
    ("  web:\n    type: OS::Nova::Server\n    properties:\n"
     "      flavor: m1.tiny\n      scheduler_hints:\n",
     "resources.web.properties.scheduler_hints.x6"),
    ("  net:\n    type: OS::Neutron::Net\n    properties:\n"
     "      value_specs:\n",
     "resources.net.properties.value_specs.x6"),
], ids=["a server's scheduler_hints", "a network's properties"])
def test_aliases_are_refused_as_resolving_copies_them(resource, where):
    # Resolution copies what an alias shares: 9 levels of 10 reached 1.9
    # GB. 8 ** 6 lols: what the old code copied whole (in a second or
    # so, some MB); refused once the copies pass the limit.
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request("heat_template_version: 2018-08-31\nresources:\n"
                      + resource + _laughs(6, 8, " " * 8))
    assert e.value.message.startswith(where)
    assert e.value.message.endswith(_LIMIT)


def test_a_get_param_named_again_and_again_is_counted_each_time():
    # Shared, not copied, by get_param; copied by the request's JSON
    # each time it is named: 300 names of 1,000 values.
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(
            "heat_template_version: 2018-08-31\nparameters:\n"
            f"  big: {{type: json, default: {list(range(1000))}}}\n"
            "resources:\n  net:\n    type: OS::Neutron::Net\n"
            "    properties:\n" + "".join(
                f"      p{i}: {{get_param: big}}\n" for i in range(300)))
    assert e.value.message.startswith("resources.net.properties.p26")
    assert e.value.message.endswith(_LIMIT)


def test_aliases_nested_too_deep_are_refused_where_they_are():
    # 5,000 aliases each in a list of the one before: "RecursionError:
    # maximum recursion depth exceeded", naming nothing.
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(
            "heat_template_version: 2018-08-31\nresources:\n"
            "  web:\n    type: OS::Nova::Server\n    properties:\n"
            "      flavor: m1.tiny\n      scheduler_hints:\n"
            "        d0: &d0 [end]\n" + "".join(
                f"        d{i}: &d{i} [*d{i - 1}]\n"
                for i in range(1, 5000)))
    assert e.value.message.startswith(
        "resources.web.properties.scheduler_hints.d")
    assert e.value.message.endswith(": nested more than 100 deep")
