"""Nested stacks: template resources of the stack's files, ResourceGroups
of them, named by their paths from the root, as deep as Heat allows."""
import json

import pytest

from scheduler import exception
from scheduler.stacks import nested
from scheduler.stacks.stack import Stack
from tests.unit.stacks.conftest import SID
from tests.unit.stacks.conftest import stack_request

#: One tier: a server in a group of its own, and whatever group and
#: server it is given to keep near.
APP = """
heat_template_version: 2018-08-31
parameters:
  size: {type: string, default: m1.tiny}
  zone: {type: string, default: nova}
  near: {type: string, default: ""}
resources:
  together:
    type: OS::Nova::ServerGroup
    properties: {policies: [affinity]}
  port: {type: OS::Neutron::Port}
  web:
    type: OS::Nova::Server
    depends_on: port
    properties:
      flavor: {get_param: size}
      availability_zone: {get_param: zone}
      scheduler_hints: {group: {get_resource: together}}
  cache:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      scheduler_hints: {same_host: {get_resource: web}}
"""

ROOT = """
heat_template_version: 2018-08-31
resources:
  net: {type: OS::Neutron::Net}
  app:
    type: app.yaml
    depends_on: net
    properties: {size: m1.small}
  lb:
    type: OS::Octavia::LoadBalancer
    properties: {app: {get_attr: [app, address]}}
"""


def _nested(text=ROOT, **files):
    return stack_request(text, files={"app.yaml": APP, **files})


def test_a_template_resource_s_resources_are_named_by_their_path():
    r = _nested()["resources"]
    assert sorted(r) == ["app", "app/cache", "app/port", "app/together",
                         "app/web", "lb", "net"]
    assert r["app/web"]["spec"]["flavor"]["name"] == "m1.small"
    assert r["app/web"]["depends_on"] == ["app/port", "app/together",
                                          "net"]
    assert r["app/cache"]["same_host"] == ["app/web"]
    assert r["app/cache"]["depends_on"] == ["net"]
    # Ordered, not placed: after all of its stack, so is what needs it.
    assert r["app"] == {"spec": None, "depends_on": [
        "app/cache", "app/port", "app/together", "app/web", "net"]}
    assert r["lb"]["depends_on"] == ["app"]


def test_a_nested_stack_is_ordered_after_its_parent_s_dependencies():
    stack = Stack.from_primitives(_nested())
    assert stack.order == [["net"], ["app/port", "app/together"],
                           ["app/web"], ["app/cache"], ["app"], ["lb"]]


def test_a_nested_server_group_s_uuid_derives_from_its_path():
    # Two template resources of one template: two groups, as in Heat.
    text = ROOT + "  app2: {type: app.yaml}\n"
    r = _nested(text)["resources"]
    groups = {r[n]["spec"]["instance_group"]["uuid"]
              for n in ("app/web", "app2/web")}
    assert len(groups) == 2
    alone = stack_request(APP.replace("{get_param: size}", "m1.small"))
    assert alone["resources"]["web"]["spec"]["instance_group"]["uuid"] \
        not in groups


@pytest.mark.parametrize("content", [
    APP, json.dumps({"heat_template_version": "2018-08-31",
                     "parameters": {"size": {"type": "string"}},
                     "resources": {"web": {"type": "OS::Nova::Server",
                                           "properties": {"flavor": {
                                               "get_param": "size"}}}}})],
    ids=["yaml", "json"])
def test_files_are_keyed_as_the_type_names_them_and_read_as_heat_keeps_them(
        content):
    # python-heatclient names them by URL, Heat keeps their text.
    url = "file:///home/me/stacks/app.yaml"
    raw = stack_request(ROOT.replace("type: app.yaml", f"type: {url}"),
                        files={url: content})
    assert raw["resources"]["app/web"]["spec"]["flavor"]["name"] == \
        "m1.small"


def test_a_nested_template_resolves_its_own_parameters_and_pseudo_ones():
    # OS::stack_name is Heat's <parent>-<resource>-<random>: here without
    # the random part, the same each time.
    raw = _nested(ROOT.replace("{size: m1.small}",
                               "{size: m1.small, zone: null}"),
                  **{"app.yaml": APP.replace(
                      "zone: {type: string, default: nova}",
                      "zone: {type: string, default: {get_param: x}}")
                     .replace("availability_zone: {get_param: zone}",
                              "availability_zone: {get_param: "
                              "OS::stack_name}")})
    assert raw["resources"]["app/web"]["spec"]["availability_zone"] == \
        f"{SID}-app"
    raw = stack_request(ROOT, stack_name="shop", files={
        "app.yaml": APP.replace("availability_zone: {get_param: zone}",
                                "availability_zone: {get_param: "
                                "OS::stack_name}")})
    assert raw["resources"]["app/web"]["spec"]["availability_zone"] == \
        "shop-app"


def test_a_null_property_leaves_the_parameter_s_default():
    raw = _nested(ROOT.replace("{size: m1.small}", "{size: null}"))
    assert raw["resources"]["app/web"]["spec"]["flavor"]["name"] == \
        "m1.tiny"


def test_parameter_defaults_reach_nested_templates_given_values_win():
    env = {"parameter_defaults": {"size": "m1.large", "zone": "az9"}}
    raw = stack_request(ROOT, files={"app.yaml": APP}, environment=env)
    spec = raw["resources"]["app/web"]["spec"]
    assert (spec["flavor"]["name"], spec["availability_zone"]) == (
        "m1.small", "az9")


_PASSED = """
heat_template_version: 2018-08-31
resources:
  apart: {type: OS::Nova::ServerGroup}
  db: {type: OS::Nova::Server, properties: {flavor: m1.large}}
  app:
    type: inner.yaml
    properties:
      group: {get_resource: apart}
      near: {get_attr: [db, show, id]}
"""
#: A server of the root in the same group, to compare with.
_GROUPED_DB = """  db2:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      scheduler_hints: {group: {get_resource: apart}}
"""
_INNER = """
heat_template_version: 2018-08-31
parameters:
  group: {type: string}
  near: {type: string}
resources:
  web:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      scheduler_hints:
        group: {get_param: group}
        different_host: {get_param: near}
"""


def test_a_server_group_or_server_passed_in_is_the_parent_s():
    # The common pattern: the group's id given as a property. Its
    # get_resource named a resource of the nested template, if any.
    raw = stack_request(_PASSED + _GROUPED_DB, files={"inner.yaml": _INNER})
    r = raw["resources"]
    assert r["app/web"]["spec"]["instance_group"] == \
        r["db2"]["spec"]["instance_group"]
    assert r["app/web"]["different_host"] == ["db"]
    assert r["app"]["depends_on"] == ["apart", "app/web", "db"]
    assert Stack.from_primitives(raw).order == [["apart", "db"],
                                                ["app/web", "db2"], ["app"]]


def test_a_group_passed_through_two_templates_is_still_the_root_s():
    middle = ("heat_template_version: 2018-08-31\nparameters:\n"
              "  group: {type: string}\n  near: {type: string}\n"
              "resources:\n  inner:\n    type: inner.yaml\n"
              "    properties:\n      group: {get_param: group}\n"
              "      near: {get_param: near}\n")
    r = stack_request(_PASSED.replace("inner.yaml", "middle.yaml")
                      + _GROUPED_DB, files={"middle.yaml": middle,
                                            "inner.yaml": _INNER}
                      )["resources"]
    assert r["app/inner/web"]["different_host"] == ["db"]
    assert r["app/inner/web"]["spec"]["instance_group"] == \
        r["db2"]["spec"]["instance_group"]


_TIER = """
heat_template_version: 2018-08-31
resources:
  net: {type: OS::Neutron::Net}
  tier:
    type: OS::Heat::ResourceGroup
    depends_on: net
    properties:
      count: 2
      resource_def:
        type: app.yaml
        properties: {zone: "az%index%", size: null}
"""


def test_a_group_of_templates_makes_count_stacks_named_by_index():
    r = _nested(_TIER)["resources"]
    assert sorted(r) == ["net", "tier"] + [
        f"tier/{i}{rest}" for i in (0, 1) for rest in (
            "", "/cache", "/port", "/together", "/web")]
    assert r["tier"] == {"spec": None,
                         "depends_on": ["net", "tier/0", "tier/1"]}
    assert r["tier/1"] == {"spec": None, "depends_on": [
        "net", "tier/1/cache", "tier/1/port", "tier/1/together",
        "tier/1/web"]}
    assert r["tier/1/web"]["depends_on"] == ["net", "tier/1/port",
                                             "tier/1/together"]
    assert r["tier/1/cache"]["same_host"] == ["tier/1/web"]
    # %index% is the member's index; each member's group its own.
    assert [r[f"tier/{i}/web"]["spec"]["availability_zone"]
            for i in (0, 1)] == ["az0", "az1"]
    assert r["tier/0/web"]["spec"]["instance_group"] != \
        r["tier/1/web"]["spec"]["instance_group"]
    assert Stack.from_primitives(_nested(_TIER)).order[-1] == ["tier"]


def test_a_group_s_index_var_is_its_own_if_it_names_one():
    text = _TIER.replace("count: 2", "count: 2\n      index_var: $i$")
    r = _nested(text.replace("az%index%", "az$i$"))["resources"]
    assert r["tier/1/web"]["spec"]["availability_zone"] == "az1"
    with pytest.raises(exception.InvalidRequest) as e:
        _nested(text.replace("$i$", "$i"))
    assert e.value.message == ("resources.tier.properties.index_var: "
                               "expected text of 3 characters or more, got "
                               "'$i'")


def test_a_group_of_servers_in_a_template_is_one_resource():
    inner = ("heat_template_version: 2018-08-31\nresources:\n"
             "  grp:\n    type: OS::Heat::ResourceGroup\n"
             "    properties:\n      count: 3\n      resource_def:\n"
             "        type: OS::Nova::Server\n"
             "        properties: {flavor: m1.tiny, name: w-%index%}\n")
    r = stack_request(ROOT, files={"app.yaml": inner.replace(
        "resources:", "parameters: {size: {type: string}}\nresources:")}
    )["resources"]
    assert r["app/grp"]["spec"]["num_instances"] == 3
    assert r["app"]["depends_on"] == ["app/grp", "net"]


def test_a_group_of_groups_of_servers_is_one_resource_a_member():
    r = stack_request("""
heat_template_version: 2018-08-31
resources:
  apart: {type: OS::Nova::ServerGroup}
  racks:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def:
        type: OS::Heat::ResourceGroup
        properties:
          count: 3
          resource_def:
            type: OS::Nova::Server
            properties:
              flavor: m1.tiny
              scheduler_hints: {group: {get_resource: apart}}
""")["resources"]
    assert sorted(r) == ["apart", "racks", "racks/0", "racks/1"]
    assert r["racks/1"]["spec"]["num_instances"] == 3
    assert r["racks/1"]["spec"]["instance_group"] == \
        r["racks/0"]["spec"]["instance_group"]
    assert r["racks/1"]["depends_on"] == ["apart"]


def _chain(depth):
    """Templates t1.yaml .. t{depth}.yaml, each nesting the next; the
    last a server."""
    files = {f"t{i}.yaml": ("heat_template_version: 2018-08-31\n"
                            f"resources:\n  n:\n    type: t{i + 1}.yaml\n")
             for i in range(1, depth)}
    files[f"t{depth}.yaml"] = (
        "heat_template_version: 2018-08-31\nresources:\n"
        "  s: {type: OS::Nova::Server, properties: {flavor: m1.tiny}}\n")
    return files


def test_stacks_nest_as_deep_as_heat_s_max_nested_stack_depth():
    text = "heat_template_version: 2018-08-31\nresources:\n  n: " \
           "{type: t1.yaml}\n"
    raw = stack_request(text, files=_chain(5))
    assert raw["resources"]["n/n/n/n/n/s"]["spec"]["num_instances"] == 1
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(text, files=_chain(6))
    # The template at fault, and where in the stack it is nested.
    assert e.value.message == (
        "template t5.yaml (resource n/n/n/n/n): resources.n.type: nested "
        "stacks more than 5 deep (Heat's max_nested_stack_depth; a "
        "ResourceGroup's is one too)")


def test_a_group_s_stack_is_one_level_as_in_heat():
    files = _chain(4)
    files["t4.yaml"] = files["t4.yaml"].replace(
        "s: {type: OS::Nova::Server, properties: {flavor: m1.tiny}}",
        "s: {type: OS::Heat::ResourceGroup, properties: {resource_def: "
        "{type: OS::Nova::Server, properties: {flavor: m1.tiny}}}}")
    text = "heat_template_version: 2018-08-31\nresources:\n  n: " \
           "{type: t1.yaml}\n"
    assert stack_request(text, files=files)["resources"]["n/n/n/n/s"]
    files["t1.yaml"] = files["t1.yaml"].replace(
        "type: t2.yaml", "type: OS::Heat::ResourceGroup\n    properties: "
        "{resource_def: {type: t2.yaml}}")
    with pytest.raises(exception.InvalidRequest,
                       match=r"resources.s.type: nested stacks more than 5"):
        stack_request(text, files=files)


def test_a_template_that_nests_itself_ends_at_the_depth_limit():
    loop = ("heat_template_version: 2018-08-31\nresources:\n"
            "  again: {type: loop.yaml}\n")
    with pytest.raises(exception.InvalidRequest,
                       match=r"nested stacks more than 5 deep"):
        stack_request(loop, files={"loop.yaml": loop})


@pytest.mark.parametrize("text, files, message", [
    (ROOT, {},
     "resources.app.type: template 'app.yaml' is not among the stack's "
     "files"),
    (ROOT.replace("app.yaml", "app.template"), {},
     "resources.app.type: template 'app.template' is not among the "
     "stack's files"),
    (_TIER.replace("app.yaml", "app.yml"), {},
     "resources.tier.properties.resource_def.type: template 'app.yml' is "
     "not among the stack's files"),
    (_TIER.replace("count: 2", "count: 0"), {},
     "resources.tier.properties.resource_def.type: template 'app.yaml' is "
     "not among the stack's files"),
    (ROOT, {"app.yaml": APP.replace(
        "default: m1.tiny", "constraints: [allowed_values: [m1.tiny]]")},
     "template app.yaml (resource app): parameters.size: 'm1.small' is not "
     "one of the allowed_values ['m1.tiny']"),
    (ROOT.replace("{size: m1.small}", "{size: m1.small, colour: red}"),
     {"app.yaml": APP},
     "template app.yaml (resource app): parameters.colour: not a parameter "
     "of the template"),
    (ROOT, {"app.yaml": APP.replace("flavor: m1.tiny", "flavor: m1.huge")},
     "template app.yaml (resource app): resources.cache.properties.flavor: "
     "unknown flavor 'm1.huge'"),
    (_TIER, {"app.yaml": APP.replace("flavor: m1.tiny", "flavor: m1.huge")},
     "template app.yaml (resource tier/0): resources.cache.properties."
     "flavor: unknown flavor 'm1.huge'"),
    (ROOT, {"app.yaml": "resources: {}"},
     "template app.yaml (resource app): heat_template_version: missing"),
    (ROOT, {"app.yaml": "- heat_template_version"},
     "template app.yaml (resource app): template: expected a mapping"),
    (ROOT, {"app.yaml": "heat_template_version: [2018\n"},
     "template app.yaml: not valid YAML (line 2: "),
], ids=["missing", "missing .template", "missing in a group",
        "missing in a group of none", "parameter",
        "no such parameter", "nested field", "member's field", "not HOT",
        "not a mapping", "not YAML"])
def test_nested_mistakes_are_named_after_their_template(text, files,
                                                        message):
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(text, files=files)
    assert e.value.message.startswith(message), e.value.message
    # Not the class that keeps the label from being added twice.
    assert type(e.value) is exception.InvalidRequest


def test_a_nested_template_without_resources_is_a_stack_of_none():
    raw = _nested(**{"app.yaml": "heat_template_version: 2018-08-31\n"
                                 "parameters: {size: {type: string}}\n"})
    assert raw["resources"]["app"] == {"spec": None, "depends_on": ["net"]}


def test_an_unknown_type_not_named_as_a_template_is_ordered_not_placed():
    raw = stack_request(ROOT.replace("app.yaml", "Vendor::App"))
    assert raw["resources"]["app"] == {"spec": None, "depends_on": ["net"]}


def test_files_that_are_no_mapping_are_named():
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(ROOT, files=["app.yaml"])
    assert e.value.message == ("files: expected a mapping of file names to "
                               "their contents")


def test_a_group_of_templates_past_the_resources_allowed_is_refused_at_once(
        monkeypatch):
    monkeypatch.setattr(nested, "MAX_RESOURCES", 10)
    with pytest.raises(exception.InvalidRequest) as e:
        _nested(_TIER.replace("count: 2", "count: 1000000000"))
    assert e.value.message == (
        "resources.tier.properties.count: 1000000000 members, but the stack "
        "may hold 9 resources more")
    # Two members fit, but not what is in them.
    with pytest.raises(exception.InvalidRequest) as e:
        _nested(_TIER)
    assert e.value.message == ("resources: more than 10 resources, those of "
                               "nested templates and groups counted")


def test_nested_templates_share_the_stack_s_budget():
    # One get_param of 1,000 values per member: 300 members are 300,000
    # values, each template within the limits alone.
    big = ("heat_template_version: 2018-08-31\nparameters:\n"
           f"  big: {{type: json, default: {list(range(1000))}}}\n"
           "  zone: {type: string}\n"
           "resources:\n  net:\n    type: OS::Neutron::Net\n"
           "    properties: {value_specs: {get_param: big}}\n")
    with pytest.raises(exception.InvalidRequest) as e:
        stack_request(_TIER.replace("count: 2", "count: 300"),
                      files={"app.yaml": big})
    assert e.value.message.endswith(
        "expands to more than 262144 values (YAML aliases and get_param "
        "repeat what they name)")
