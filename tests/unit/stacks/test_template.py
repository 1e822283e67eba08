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
    spec = _stack(_ZONES, parameters=given)["resources"]["web"]["spec"]
    assert spec["availability_zone"] == zone
    assert spec["scheduler_hints"] == {"build_near_host_ip": near}


def test_a_json_parameter_that_is_not_json_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        _stack(_ZONES, parameters={"hints": "{web"})
    assert e.value.message.startswith("parameters.hints: not JSON"), \
        e.value.message


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
    raw = _stack(_CONDITIONAL, parameters={"env": env})
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
    raw = _stack(text, parameters={"env": env})
    assert Stack.from_primitives(raw).order == order


def test_an_unknown_condition_is_named():
    with pytest.raises(exception.InvalidRequest) as e:
        _stack(_CONDITIONAL.replace("condition: is_prod",
                                    "condition: is_big"))
    assert e.value.message.startswith(
        "resources.standby.condition: no condition 'is_big'"), \
        e.value.message


@pytest.mark.parametrize("flavor", ["'4'", "4", "m1.large"])
def test_a_flavor_is_found_by_its_id_as_by_its_name(flavor):
    # Heat's flavor property takes the flavor's name or id; an id (4, or
    # "4") was refused as an unknown flavor name.
    raw = _stack("heat_template_version: 2018-08-31\nresources:\n"
                 "  db:\n    type: OS::Nova::Server\n"
                 f"    properties: {{flavor: {flavor}}}\n")
    assert raw["resources"]["db"]["spec"]["flavor"]["name"] == "m1.large"


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
        spec = _stack(text, parameters={"env": env})[
            "resources"]["web"]["spec"]
        assert (spec["flavor"]["memory_mb"], spec["availability_zone"]) \
            == (memory_mb, zone)


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
        _stack(_CONSTRAINED, parameters=given)
    assert e.value.message == message


def test_a_parameter_within_its_constraints_is_taken():
    raw = _stack(_CONSTRAINED, parameters={"size": "m1.medium",
                                           "name": "db", "replicas": "3"})
    assert raw["resources"]["web"]["spec"]["flavor"]["name"] == "m1.medium"


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
    raw = _stack(_GROUPED, parameters={"workers": "2"})
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
    raw = _stack(_GROUPED, parameters={"workers": "0"})
    assert raw["resources"]["workers"]["spec"] is None
    raw = _stack(_GROUPED.replace("type: OS::Nova::Server\n        ",
                                  "type: OS::Cinder::Volume\n        "))
    assert raw["resources"]["workers"]["spec"] is None


def test_a_resource_group_s_server_mistakes_are_named_in_its_resource_def():
    with pytest.raises(exception.InvalidRequest) as e:
        _stack(_GROUPED.replace("flavor: m1.small", "flavor: m1.huge"))
    assert e.value.message.startswith(
        "resources.workers.properties.resource_def.properties.flavor: "
        "unknown flavor 'm1.huge'"), e.value.message
    with pytest.raises(exception.InvalidRequest) as e:
        _stack(_GROUPED, parameters={"workers": "-1"})
    assert e.value.message == (
        "resources.workers.properties.count: expected a number of "
        "resources (0 or more), got -1")


def test_a_group_hint_that_is_not_a_get_resource_is_named():
    # {get_resource: [g], x: 1} is no get_resource (a function is the one
    # key of its mapping): it was looked up as one, a TypeError traceback.
    raw = _stack("""
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
                       match=r"^stack.resources.s.spec.scheduler_hints.group"
                             r": .* is not a server group uuid"):
        Stack.from_primitives(raw)


@pytest.mark.parametrize("group", [
    "{type: OS::Nova::ServerGroup}",
    "{type: OS::Nova::ServerGroup, properties: {name: web}}",
])
def test_a_server_group_without_policies_is_anti_affinity_as_in_heat(group):
    # Heat's OS::Nova::ServerGroup defaults ``policies`` to
    # [anti-affinity]: such a template was refused ("expected one policy").
    raw = _stack(f"""
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
    raw = _stack(f"""
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
        _stack("""
heat_template_version: 2018-08-31
resources:
  s:
    type: OS::Nova::Server
    properties: {flavor: m1.small, availability_zone: "a:b:c:d"}
""")
    assert e.value.message.startswith(
        "resources.s.properties.availability_zone: "), e.value.message


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
    return _stack(_HINTED.replace("{HINT}", hint))


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
