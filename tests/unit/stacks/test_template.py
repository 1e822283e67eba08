"""HOT templates as select_stack requests: parameters, get_param,
get_resource and depends_on as dependencies, relations, server groups,
flavors by name, and mistakes named by field."""
from pathlib import Path

import pytest
import yaml

from scheduler import exception
from scheduler.stacks import template
from scheduler.stacks.stack import Stack

ETC = Path(__file__).resolve().parents[3] / "etc" / "scheduler"
FLAVORS = template.load_flavors(ETC / "flavors.yaml")
SID = "5a0b0c0d-0000-4000-8000-0000000000d1"


def _stack(text, **kw):
    return template.to_stack(yaml.safe_load(text), SID, FLAVORS, **kw)


def test_nova_flavors_are_the_default_flavors():
    assert FLAVORS["m1.tiny"] == {"name": "m1.tiny", "flavorid": "1",
                                  "memory_mb": 512, "vcpus": 1,
                                  "root_gb": 1}
    assert sorted(FLAVORS) == ["m1.large", "m1.medium", "m1.small",
                               "m1.tiny", "m1.xlarge"]


def test_the_examples_are_valid_stacks():
    for name in ("three-tier-web", "db-cluster"):
        raw = template.to_stack(
            template.load_yaml(ETC / "stacks" / f"{name}.yaml", "template"),
            template.stack_id_for(name), FLAVORS)
        assert Stack.from_primitives(raw).placed


TEMPLATE = """
heat_template_version: 2018-08-31
parameters:
  size: {type: string, default: m1.small}
  zone: {type: string}
resources:
  grp:
    type: OS::Nova::ServerGroup
    properties: {policies: [anti-affinity]}
  port:
    type: OS::Neutron::Port
    properties: {network: {get_resource: net}}
  net:
    type: OS::Neutron::Net
  a:
    type: OS::Nova::Server
    depends_on: port
    properties:
      flavor: {get_param: size}
      image: cirros
      availability_zone: {get_param: zone}
      networks: [{port: {get_resource: port}}]
      scheduler_hints:
        group: {get_resource: grp}
        different_host: [{get_resource: b}, 6f1c4c6e-9b4d-4bfa-9a55-3c0a4d2f2f11]
        build_near_host_ip: 10.0.0.1
  b:
    type: OS::Nova::Server
    depends_on: [net]
    properties: {flavor: m1.tiny}
"""


def test_a_template_becomes_a_stack():
    raw = _stack(TEMPLATE, parameters={"zone": "az2"}, project_id="p1")
    r = raw["resources"]
    assert raw["stack_id"] == SID and raw["project_id"] == "p1"
    assert r["net"] == {"spec": None, "depends_on": []}
    assert r["port"] == {"spec": None, "depends_on": ["net"]}
    assert r["grp"]["spec"] is None
    a = r["a"]
    assert a["depends_on"] == ["grp", "port"]
    assert a["different_host"] == ["b"]
    assert a["spec"]["flavor"]["memory_mb"] == 2048
    assert a["spec"]["availability_zone"] == "az2"
    assert a["spec"]["image"] == {"name": "cirros"}
    assert a["spec"]["scheduler_hints"] == {
        "different_host": ["6f1c4c6e-9b4d-4bfa-9a55-3c0a4d2f2f11"],
        "build_near_host_ip": "10.0.0.1"}
    assert a["spec"]["instance_group"]["policies"] == ["anti-affinity"]
    stack = Stack.from_primitives(raw)
    assert stack.order == [["grp", "net"], ["b", "port"], ["a"]]


@pytest.mark.parametrize("text, kw, message", [
    ("resources: {a: {type: OS::Nova::Server}}", {},
     "heat_template_version: missing"),
    (TEMPLATE, {}, "resources.a.properties.availability_zone: get_param "
                   "'zone': no such parameter, or it has no value"),
    (TEMPLATE, {"parameters": {"zone": "az1", "colour": "red"}},
     "parameters.colour: not a parameter of the template"),
    (TEMPLATE, {"parameters": {"zone": "az1", "size": "m1.huge"}},
     "resources.a.properties.flavor: unknown flavor 'm1.huge' (known: "
     "m1.large, m1.medium, m1.small, m1.tiny, m1.xlarge)"),
    ("heat_template_version: 2018-08-31\nresources:\n  a:\n"
     "    type: OS::Nova::Server\n    properties:\n      flavor: m1.tiny\n"
     "      networks: [{port: {get_resource: nope}}]\n", {},
     "resources.a.properties.networks[0].port: get_resource 'nope': no "
     "such resource"),
    ("heat_template_version: 2018-08-31\nresources:\n  a:\n"
     "    type: OS::Nova::Server\n    properties:\n      flavor: m1.tiny\n"
     "      scheduler_hints: {group: {get_resource: b}}\n"
     "  b: {type: OS::Nova::Server, properties: {flavor: m1.tiny}}\n", {},
     "resources.a.properties.scheduler_hints.group: 'b' is not an "
     "OS::Nova::ServerGroup"),
])
def test_mistakes_are_named(text, kw, message):
    with pytest.raises(exception.InvalidRequest) as e:
        _stack(text, **kw)
    assert e.value.message.startswith(message), e.value.message


def test_unreadable_files_are_named(tmp_path):
    with pytest.raises(exception.InvalidRequest,
                       match=r"^template .*missing.yaml: No such file"):
        template.load_yaml(tmp_path / "missing.yaml", "template")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n")
    with pytest.raises(exception.InvalidRequest,
                       match=r"^template .*bad.yaml: not valid YAML"):
        template.load_yaml(bad, "template")
    bad.write_text("- 1\n")
    with pytest.raises(exception.InvalidRequest,
                       match=r"^flavors file .*: expected a mapping"):
        template.load_flavors(bad)


_SERVER = ("heat_template_version: 2018-08-31\nresources:\n"
           "  g: {type: OS::Nova::ServerGroup, properties: "
           "{policies: [affinity]}}\n"
           "  a:\n    type: OS::Nova::Server\n")


@pytest.mark.parametrize("text, message", [
    (_SERVER + "    properties: [flavor, m1.tiny]\n",
     "resources.a.properties: expected a mapping, got list"),
    ("heat_template_version: 2018-08-31\nresources:\n"
     "  g: {type: OS::Nova::ServerGroup, properties: anti-affinity}\n",
     "resources.g.properties: expected a mapping, got str"),
    (_SERVER + "    properties: {flavor: m1.tiny, scheduler_hints: g}\n",
     "resources.a.properties.scheduler_hints: expected a mapping, got str"),
    (_SERVER + "    properties: {flavor: m1.tiny, scheduler_hints: [g]}\n",
     "resources.a.properties.scheduler_hints: expected a mapping, got list"),
    (_SERVER + "    properties:\n      flavor: m1.tiny\n"
     "      networks: [{port: {get_resource: [g]}}]\n",
     "resources.a.properties.networks[0].port: get_resource: expected a "
     "resource name, got \"['g']\""),
    (_SERVER + "    properties:\n      flavor: m1.tiny\n"
     "      scheduler_hints: {group: {get_resource: {g: 1}}}\n",
     "resources.a.properties.scheduler_hints.group: get_resource: expected "
     "a resource name"),
    (_SERVER + "    properties: {flavor: {get_param: {size: 1}}}\n",
     "resources.a.properties.flavor: get_param: expected a parameter name"),
])
def test_malformed_templates_are_named_not_a_type_error(text, message):
    with pytest.raises(exception.InvalidRequest) as e:
        _stack(text)
    assert e.value.message.startswith(message), e.value.message


def test_get_attr_is_a_dependency_as_in_heat():
    # Heat creates a resource after every resource whose attribute it
    # reads (the port's address is known once the port exists).
    raw = _stack("heat_template_version: 2018-08-31\nresources:\n"
                 "  port: {type: OS::Neutron::Port}\n"
                 "  ip: {type: OS::Neutron::FloatingIP, properties: "
                 "{port_id: {get_attr: [port, show, id]}}}\n"
                 "  web:\n    type: OS::Nova::Server\n"
                 "    properties:\n      flavor: m1.tiny\n"
                 "      user_data: {str_replace: {template: 'ip=$ip', "
                 "params: {$ip: {get_attr: [ip, floating_ip_address]}}}}\n")
    assert raw["resources"]["web"]["depends_on"] == ["ip"]
    assert raw["resources"]["ip"]["depends_on"] == ["port"]
    assert Stack.from_primitives(raw).order == [["port"], ["ip"], ["web"]]


def test_get_attr_of_an_unknown_resource_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        _stack("heat_template_version: 2018-08-31\nresources:\n"
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
        _stack("heat_template_version: 2018-08-31\nresources:\n"
               "  port: {type: OS::Neutron::Port}\n"
               "  web:\n    type: OS::Nova::Server\n"
               f"    properties: {{flavor: m1.tiny, user_data: "
               f"{{get_attr: {arg}}}}}\n")
    assert e.value.message == "resources.web.properties.user_data: " + message


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    # Latin-1 "café": the decode error came out of yaml.safe_load as a
    # UnicodeDecodeError naming neither the file nor what it was for.
    path = tmp_path / "shop.yaml"
    path.write_bytes(b"heat_template_version: 2018-08-31\nresources:\n"
                     b"  caf\xe9: {type: OS::Nova::Server}\n")
    with pytest.raises(exception.InvalidRequest) as e:
        template.load_yaml(path, "template")
    assert e.value.message == f"template {path}: not UTF-8 text"


_SIZES = ("heat_template_version: 2018-08-31\n"
          "parameters:\n  sizes:\n    type: json\n"
          "    default: {web: m1.small, tiers: [m1.tiny, m1.large]}\n"
          "resources:\n  web:\n    type: OS::Nova::Server\n"
          "    properties: {flavor: {get_param: %s}}\n")


def test_get_param_with_a_path_follows_it_as_heat_does():
    # [name, key, index, ...]: the flavor was the whole parameter.
    for path, memory_mb in (("[sizes, web]", 2048),
                            ("[sizes, tiers, 1]", 8192)):
        raw = _stack(_SIZES % path)
        assert raw["resources"]["web"]["spec"]["flavor"]["memory_mb"] == \
            memory_mb


def test_get_param_with_a_path_that_is_not_there_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        _stack(_SIZES % "[sizes, db]")
    assert e.value.message.startswith(
        "resources.web.properties.flavor: get_param 'sizes': no 'db' in ")


def test_heat_pseudo_parameters_have_values():
    # Real templates name their servers after the stack; such a template
    # was refused ("get_param 'OS::stack_name': no such parameter").
    raw = _stack("heat_template_version: 2018-08-31\nresources:\n"
                 "  web:\n    type: OS::Nova::Server\n    properties:\n"
                 "      flavor: m1.tiny\n"
                 "      name: {list_join: ['-', [{get_param: "
                 "'OS::stack_name'}, web]]}\n"
                 "      metadata: {stack: {get_param: 'OS::stack_id'}, "
                 "project: {get_param: 'OS::project_id'}}\n",
                 project_id="p1")
    assert raw["resources"]["web"]["spec"]["flavor"]["name"] == "m1.tiny"
