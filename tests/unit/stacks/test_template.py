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
