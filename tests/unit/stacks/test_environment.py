"""A stack's environment as Heat reads it: parameters, parameter_defaults,
the resource registry, and what cannot be read."""
import pytest

from scheduler import exception
from scheduler.stacks.stack import Stack
from tests.unit.stacks.conftest import stack_request

_SIZED = """
heat_template_version: 2018-08-31
parameters:
  size: {type: string, default: m1.tiny}
  zone: {type: string, default: nova}
resources:
  web:
    type: OS::Nova::Server
    properties:
      flavor: {get_param: size}
      availability_zone: {get_param: zone}
"""


def _web(raw, name="web"):
    spec = raw["resources"][name]["spec"]
    return spec["flavor"]["name"], spec.get("availability_zone")


def test_the_environment_s_parameters_are_the_template_s_values():
    raw = stack_request(_SIZED, environment={
        "parameters": {"size": "m1.large", "zone": "az1"}})
    assert _web(raw) == ("m1.large", "az1")


def test_a_parameter_given_overrides_the_environment_s_name_by_name():
    # --parameter after -e, as Heat's client sends them.
    raw = stack_request(_SIZED, parameters={"zone": "az2"}, environment={
        "parameters": {"size": "m1.large", "zone": "az1"}})
    assert _web(raw) == ("m1.large", "az2")


def test_parameter_defaults_replace_the_default_a_value_still_wins():
    env = {"parameter_defaults": {"size": "m1.small", "zone": "az3",
                                  "unused": "any template's"}}
    assert _web(stack_request(_SIZED, environment=env)) == ("m1.small",
                                                            "az3")
    env["parameters"] = {"zone": "az4"}
    assert _web(stack_request(_SIZED, environment=env)) == ("m1.small",
                                                            "az4")


def test_parameter_defaults_are_held_to_the_parameter_s_constraints():
    text = _SIZED.replace("{type: string, default: m1.tiny}",
                          "{type: string, default: m1.tiny, constraints: "
                          "[allowed_values: [m1.tiny, m1.small]]}")
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(text, environment={
            "parameter_defaults": {"size": "m1.large"}})
    assert e.value.message == ("parameters.size: 'm1.large' is not one of "
                               "the allowed_values ['m1.tiny', 'm1.small']")


def test_an_environment_parameter_the_template_lacks_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_SIZED, environment={"parameters": {"colour": "red"}})
    assert e.value.message == \
        "parameters.colour: not a parameter of the template"


_MAPPED = """
heat_template_version: 2018-08-31
resources:
  web: {type: My::Box, properties: {flavor: m1.small}}
  net: {type: OS::Networking::Net}
"""


@pytest.mark.parametrize("registry", [
    {"My::Box": "OS::Nova::Server"},
    {"My::Box": "My::Server", "My::Server": "OS::Nova::Server"},
    {"My::*": "OS::Nova::Server"},
    {"My::*": "OS::Nova::*", "OS::Nova::Box": "OS::Nova::Server"},
], ids=["a type", "a chain", "a glob", "a glob's star, then a type"])
def test_a_registry_mapping_is_followed_to_the_type_placed(registry):
    raw = stack_request(_MAPPED, environment={"resource_registry": registry})
    assert raw["resources"]["web"]["spec"]["flavor"]["name"] == "m1.small"
    assert raw["resources"]["net"]["spec"] is None


def test_a_null_registry_entry_maps_nothing():
    # Heat's way of taking out a mapping an earlier environment made.
    raw = stack_request(_MAPPED, environment={
        "resource_registry": {"My::Box": None}})
    assert raw["resources"]["web"]["spec"] is None


def test_a_glob_mapping_many_types_to_one_stops_there():
    raw = stack_request(_MAPPED, environment={
        "resource_registry": {"OS::*": "OS::Heat::None",
                              "My::Box": "OS::Nova::Server"}})
    # OS::Nova::Server is under OS::* too: in Heat it is then None.
    assert raw["resources"]["web"]["spec"] is None


@pytest.mark.parametrize("registry, chain", [
    ({"My::Box": "My::Box"}, "My::Box -> My::Box"),
    ({"My::Box": "My::Cube", "My::Cube": "My::Box"},
     "My::Box -> My::Cube -> My::Box"),
    ({"My::*": "My::Big::*"}, "My::Box -> My::Big::Box -> My::Big::Big::Box"),
])
def test_registry_mappings_without_end_are_refused(registry, chain):
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_MAPPED, environment={"resource_registry": registry})
    assert e.value.message == (f"resources.web.type: resource_registry "
                               f"maps {chain}, without end")


def test_a_registry_entry_that_is_no_type_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_MAPPED, environment={
            "resource_registry": {"My::Box": ["OS::Nova::Server"]}})
    assert e.value.message == (
        "environment.resource_registry.My::Box: expected a type or a "
        "template file name, got \"['OS::Nova::Server']\"")


def test_encrypted_parameters_are_refused_naming_them():
    # Heat keeps hidden parameters encrypted with its own key.
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_SIZED, environment={
            "parameters": {"size": "gAAAA..."},
            "encrypted_param_names": ["size", "zone"]})
    assert e.value.message == (
        "environment.encrypted_param_names: parameters size, zone are kept "
        "encrypted by Heat (hidden parameters), and cannot be read")


def test_what_heat_keeps_besides_is_ignored():
    # An environment as Heat stores it with a stack.
    raw = stack_request(_SIZED, environment={
        "parameters": {}, "parameter_defaults": {}, "event_sinks": [],
        "encrypted_param_names": [], "parameter_merge_strategies": {},
        "resource_registry": {"resources": {
            "*": {"hooks": "pre-create"},
            "web": {"restricted_actions": "replace"}}}})
    assert _web(raw) == ("m1.tiny", "nova")


@pytest.mark.parametrize("section", [
    {"web": {"OS::Nova::Server": "My::Other"}},
    {"net": {"OS::Neutron::Net": "OS::Nova::Server"}},
    {"app": {"web": {"My::Box": "box.yaml"}}},
    {"net": {"OS::Neutron::Net": "OS::Heat::ResourceGroup"}},
])
def test_a_per_resource_mapping_changing_what_is_placed_is_refused(section):
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_SIZED, environment={
            "resource_registry": {"resources": section}})
    assert e.value.message.startswith("environment.resource_registry."
                                      "resources."), e.value.message
    assert e.value.message.endswith(
        ") is not read, and this one changes what is placed (map the type "
        "for the whole stack instead)")


def test_a_per_resource_mapping_of_other_types_is_ignored():
    raw = stack_request(_SIZED, environment={"resource_registry": {
        "resources": {"port": {"OS::Neutron::Port": "My::Port"}}}})
    assert _web(raw) == ("m1.tiny", "nova")


@pytest.mark.parametrize("environment, message", [
    ([], "environment: expected a mapping"),
    ({"parameters": ["size"]}, "environment.parameters: expected a mapping"),
    ({"resource_registry": "x.yaml"},
     "environment.resource_registry: expected a mapping"),
    ({"resource_registry": {"resources": ["web"]}},
     "environment.resource_registry.resources: expected a mapping"),
])
def test_an_environment_of_the_wrong_shape_is_named(environment, message):
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_SIZED, environment=environment)
    assert e.value.message == message


def test_a_registry_mapping_to_a_template_the_files_lack_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_MAPPED, environment={
            "resource_registry": {"My::Box": "box.yaml"}})
    assert e.value.message == (
        "resources.web.type: template 'box.yaml' (resource_registry maps "
        "'My::Box' to it) is not among the stack's files")


def test_a_server_mapped_to_a_template_wraps_the_server_itself():
    # Heat takes the entry that made a template resource out of its
    # nested template's registry: the server in it is a server.
    wrap = ("heat_template_version: 2018-08-31\nparameters:\n"
            "  flavor: {type: string}\nresources:\n  server:\n"
            "    type: OS::Nova::Server\n"
            "    properties: {flavor: {get_param: flavor}}\n")
    raw = stack_request(_MAPPED, files={"wrap.yaml": wrap}, environment={
        "resource_registry": {"My::Box": "OS::Nova::Server",
                              "OS::Nova::Server": "wrap.yaml"}})
    assert raw["resources"]["web"]["spec"] is None
    assert raw["resources"]["web/server"]["spec"]["flavor"]["name"] == \
        "m1.small"
    assert Stack.from_primitives(raw).order == [["net", "web/server"],
                                                ["web"]]
