"""HOT templates as select_stack requests: resources, depends_on,
ResourceGroups, the stack id, and mistakes named by field."""
import pytest
import yaml

from scheduler import exception
from scheduler.stacks import files
from scheduler.stacks import template
from scheduler.stacks.stack import Stack
from tests.unit.stacks.conftest import ETC
from tests.unit.stacks.conftest import FLAVORS
from tests.unit.stacks.conftest import SID
from tests.unit.stacks.conftest import stack_request


def test_the_examples_are_valid_stacks():
    for name in ("three-tier-web", "db-cluster"):
        raw = template.to_stack(
            files.load_yaml(ETC / "stacks" / f"{name}.yaml", "template"),
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
    raw = stack_request(TEMPLATE, parameters={"zone": "az2"}, project_id="p1")
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
        stack_request(text, **kw)
    assert e.value.message.startswith(message), e.value.message


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
        stack_request(text)
    assert e.value.message.startswith(message), e.value.message


def test_heat_pseudo_parameters_have_values():
    # Real templates name their servers after the stack; such a template
    # was refused ("get_param 'OS::stack_name': no such parameter").
    raw = stack_request("heat_template_version: 2018-08-31\nresources:\n"
                        "  web:\n    type: OS::Nova::Server\n    properties:\n"
                        "      flavor: m1.tiny\n"
                        "      name: {list_join: ['-', [{get_param: "
                        "'OS::stack_name'}, web]]}\n"
                        "      metadata: {stack: {get_param: 'OS::stack_id'}, "
                        "project: {get_param: 'OS::project_id'}}\n",
                        project_id="p1")
    assert raw["resources"]["web"]["spec"]["flavor"]["name"] == "m1.tiny"


_GROUPED = """
heat_template_version: 2018-08-31
parameters:
  workers: {type: number, default: 3}
resources:
  db:
    type: OS::Nova::Server
    properties: {flavor: m1.large}
  apart:
    type: OS::Nova::ServerGroup
    properties: {policies: [anti-affinity]}
  workers:
    type: OS::Heat::ResourceGroup
    properties:
      count: {get_param: workers}
      resource_def:
        type: OS::Nova::Server
        properties:
          name: worker-%index%
          flavor: m1.small
          scheduler_hints:
            group: {get_resource: apart}
            different_host: {get_resource: db}
"""


def test_a_resource_group_of_servers_places_count_servers():
    # Heat's OS::Heat::ResourceGroup creates ``count`` servers of its
    # resource_def; it was only ordered: the stack was placed with none
    # of them claimed.
    raw = stack_request(_GROUPED, parameters={"workers": "2"})
    workers = raw["resources"]["workers"]
    assert workers["spec"]["num_instances"] == 2
    assert workers["spec"]["flavor"]["name"] == "m1.small"
    assert workers["spec"]["instance_group"]["policies"] == ["anti-affinity"]
    assert workers["different_host"] == ["db"]
    assert workers["depends_on"] == ["apart"]
    stack = Stack.from_primitives(raw)
    assert stack.placed["workers"].spec.num_instances == 2
    assert stack.order == [["apart", "db"], ["workers"]]


def test_a_resource_group_of_none_or_of_other_resources_is_not_placed():
    raw = stack_request(_GROUPED, parameters={"workers": "0"})
    assert raw["resources"]["workers"]["spec"] is None
    raw = stack_request(_GROUPED.replace("type: OS::Nova::Server\n        ",
                                         "type: OS::Cinder::Volume\n        "))
    assert raw["resources"]["workers"]["spec"] is None


def test_a_resource_group_s_server_mistakes_are_named_in_its_resource_def():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_GROUPED.replace("flavor: m1.small", "flavor: m1.huge"))
    assert e.value.message.startswith(
        "resources.workers.properties.resource_def.properties.flavor: "
        "unknown flavor 'm1.huge'"), e.value.message
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_GROUPED, parameters={"workers": "-1"})
    assert e.value.message == (
        "resources.workers.properties.count: expected a number of "
        "resources (0 or more), got -1")


def test_one_stack_id_written_two_ways_is_one_stack():
    # The group's uuid was derived from the id as written: the same stack
    # sent again with its id in capitals (or without dashes) was "already
    # placed with another definition".
    text = """
heat_template_version: 2018-08-31
resources:
  g: {type: OS::Nova::ServerGroup, properties: {policies: [anti-affinity]}}
  s:
    type: OS::Nova::Server
    properties: {flavor: m1.small, scheduler_hints: {group: {get_resource: g}}}
"""
    written = [SID, SID.upper(), SID.replace("-", "")]
    stacks = [Stack.from_primitives(template.to_stack(yaml.safe_load(text),
                                                      sid, FLAVORS))
              for sid in written]
    assert {s.definition for s in stacks} == {stacks[0].definition}


def test_a_resource_group_s_index_may_name_its_servers_not_place_them():
    # One spec places the group's servers: %index% in a hint would make
    # each another, and all were placed by the first's.
    raw = stack_request(_GROUPED.replace("flavor: m1.small",
                                         "flavor: m1.small\n"
                                         "          metadata: {i: '%index%'}"))
    assert raw["resources"]["workers"]["spec"]["num_instances"] == 3
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_GROUPED.replace(
            "different_host: {get_resource: db}",
            "build_near_host_ip: 10.0.0.%index%"))
    assert e.value.message == (
        "resources.workers.properties.resource_def.properties: %index% in "
        "what places a server (its flavor, image, zone or hints) would make "
        "the group's servers differ, but they are placed alike, as one "
        "resource")
    # One server: nothing to tell apart.
    raw = stack_request(_GROUPED.replace(
        "different_host: {get_resource: db}",
        "build_near_host_ip: 10.0.0.%index%"), parameters={"workers": "1"})
    assert raw["resources"]["workers"]["spec"]["scheduler_hints"] == {
        "build_near_host_ip": "10.0.0.0"}


def test_a_resource_group_without_a_type_to_make_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_GROUPED.replace("type: OS::Nova::Server\n        ",
                                       ""))
    assert e.value.message == \
        "resources.workers.properties.resource_def.type: missing"


def test_a_resource_name_holding_a_slash_is_refused():
    # Heat forbids it; here it would be taken for a nested resource.
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request("heat_template_version: 2018-08-31\nresources:\n"
                      "  app/web: {type: OS::Nova::Server}\n")
    assert e.value.message == ("resources.app/web: a resource's name cannot "
                               "hold '/' (Heat's cannot either)")
