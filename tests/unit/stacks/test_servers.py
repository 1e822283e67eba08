"""A template's servers: flavor by name or id, zones forcing hosts, server
groups, and which references are relations within the stack."""
import pytest
import yaml

from scheduler import exception
from scheduler.stacks.stack import Stack
from tests.unit.stacks.conftest import stack_request


@pytest.mark.parametrize("flavor", ["'4'", "4", "m1.large"])
def test_a_flavor_is_found_by_its_id_as_by_its_name(flavor):
    # Heat's flavor property takes the flavor's name or id; an id (4, or
    # "4") was refused as an unknown flavor name.
    raw = stack_request("heat_template_version: 2018-08-31\nresources:\n"
                        "  db:\n    type: OS::Nova::Server\n"
                        f"    properties: {{flavor: {flavor}}}\n")
    assert raw["resources"]["db"]["spec"]["flavor"]["name"] == "m1.large"


def test_a_group_hint_that_is_not_a_get_resource_is_named():
    # {get_resource: [g], x: 1} is no get_resource (a function is the one
    # key of its mapping): it was looked up as one, a TypeError traceback.
    raw = stack_request("""
heat_template_version: 2018-08-31
resources:
  g: {type: OS::Nova::ServerGroup, properties: {policies: [anti-affinity]}}
  s:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      scheduler_hints: {group: {get_resource: [g], x: 1}}
""")
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources.s.spec.scheduler_hints.group"
                             r": .* is not a server group uuid"):
        Stack.from_primitives(raw)


@pytest.mark.parametrize("group", [
    "{type: OS::Nova::ServerGroup}",
    "{type: OS::Nova::ServerGroup, properties: {name: web}}",
])
def test_a_server_group_without_policies_is_anti_affinity_as_in_heat(group):
    # Heat's OS::Nova::ServerGroup defaults ``policies`` to
    # [anti-affinity]: such a template was refused ("expected one policy").
    raw = stack_request(f"""
heat_template_version: 2018-08-31
resources:
  g: {group}
  s:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      scheduler_hints: {{group: {{get_resource: g}}}}
""")
    assert raw["resources"]["s"]["spec"]["instance_group"]["policies"] == [
        "anti-affinity"]
    assert Stack.from_primitives(raw).order == [["g"], ["s"]]


@pytest.mark.parametrize("zone, placed", [
    ("nova", {"availability_zone": "nova"}),
    ("nova:h1", {"availability_zone": "nova", "force_hosts": ["h1"]}),
    ("nova:h1:n1", {"availability_zone": "nova", "force_hosts": ["h1"],
                    "force_nodes": ["n1"]}),
    ("nova::n1", {"availability_zone": "nova", "force_nodes": ["n1"]}),
    (":h1", {"force_hosts": ["h1"]}),
])
def test_a_zone_naming_a_host_forces_it_as_nova_reads_it(zone, placed):
    # Heat hands availability_zone to nova, whose API reads an admin's
    # zone:host, zone:host:node and zone::node as forced host and node:
    # the whole text was taken as the zone's name, a zone no host is in.
    raw = stack_request(f"""
heat_template_version: 2018-08-31
resources:
  s:
    type: OS::Nova::Server
    properties: {{flavor: m1.small, availability_zone: "{zone}"}}
""")
    spec = raw["resources"]["s"]["spec"]
    assert {k: spec[k] for k in ("availability_zone", "force_hosts",
                                 "force_nodes") if k in spec} == placed
    Stack.from_primitives(raw)


def test_a_zone_with_too_many_colons_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request("""
heat_template_version: 2018-08-31
resources:
  s:
    type: OS::Nova::Server
    properties: {flavor: m1.small, availability_zone: "a:b:c:d"}
""")
    assert e.value.message.startswith(
        "resources.s.properties.availability_zone: "), e.value.message


_HINTED = """
heat_template_version: 2018-08-31
resources:
  port: {type: OS::Neutron::Port}
  g: {type: OS::Nova::ServerGroup, properties: {policies: [affinity]}}
  srv1: {type: OS::Nova::Server, properties: {flavor: m1.tiny}}
  srv2:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      scheduler_hints: {HINT}
"""


def _hinted(hint):
    return stack_request(_HINTED.replace("{HINT}", hint))


@pytest.mark.parametrize("relation", ["same_host", "different_host"])
@pytest.mark.parametrize("ref", ["{get_attr: [srv1, show, id]}",
                                 "[{get_attr: [srv1, show, id]}]"])
def test_get_attr_of_a_server_s_id_is_a_relation_as_get_resource_is(
        relation, ref):
    # Heat's show attribute of an OS::Nova::Server is nova's record of the
    # server, whose id is what get_resource gives: the hint names srv1 as
    # surely. It was left to the spec, refused as "not an instance uuid".
    raw = _hinted(f"{{{relation}: {ref}}}")
    same = _hinted(f"{{{relation}: {{get_resource: srv1}}}}")
    assert raw["resources"]["srv2"][relation] == ["srv1"]
    assert "scheduler_hints" not in raw["resources"]["srv2"]["spec"]
    assert Stack.from_primitives(raw).definition == \
        Stack.from_primitives(same).definition


def test_get_attr_of_a_server_group_s_id_names_the_group():
    raw = _hinted("{group: {get_attr: [g, show, id]}}")
    same = _hinted("{group: {get_resource: g}}")
    assert raw["resources"]["srv2"]["spec"]["instance_group"]["policies"] \
        == ["affinity"]
    assert raw == same


@pytest.mark.parametrize("arg", [
    "[srv1, first_address]", "[srv1, name]", "[srv1, show]",
    "[srv1, show, name]", "[srv1, show, id, 0]", "[port, show, id]"])
def test_a_get_attr_that_is_not_a_server_s_id_is_refused_naming_it(arg):
    with pytest.raises(exception.InvalidRequest) as e:
        _hinted(f"{{different_host: [{{get_attr: {arg}}}]}}")
    assert e.value.message == (
        f"resources.srv2.properties.scheduler_hints.different_host: "
        f"get_attr {yaml.safe_load(arg)!r} is not a server's id (name a "
        f"server of the stack with {{get_resource: NAME}} or "
        f"{{get_attr: [NAME, show, id]}})")


def test_a_get_attr_a_parameter_gives_of_no_resource_is_named():
    # A json parameter's value is not resolved: its get_attr may name no
    # resource, which was looked up as one (KeyError).
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request("""
heat_template_version: 2018-08-31
parameters:
  near: {type: json, default: {get_attr: [nope, show, id]}}
resources:
  s:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      scheduler_hints: {different_host: {get_param: near}}
""")
    assert e.value.message == (
        "resources.s.properties.scheduler_hints.different_host: get_attr "
        "['nope', 'show', 'id'] is not a server's id (name a server of the "
        "stack with {get_resource: NAME} or {get_attr: [NAME, show, id]})")
