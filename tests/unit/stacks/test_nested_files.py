"""A stack's files read from disk as python-heatclient reads them: nested
templates relative to the file naming them, environments merged in
order."""
import pytest

from scheduler import exception
from scheduler.stacks import nested_files
from scheduler.stacks import template as heat
from scheduler.stacks.stack import Stack
from tests.unit.stacks.conftest import FLAVORS
from tests.unit.stacks.conftest import SID

_SERVER = """heat_template_version: 2018-08-31
parameters:
  size: {type: string, default: m1.tiny}
resources:
  s:
    type: OS::Nova::Server
    properties: {flavor: {get_param: size}}
"""


def stack_request_of(template, files, environment=None):
    """The request for a template read with its files."""
    return heat.to_stack(template, SID, FLAVORS, files=files,
                         environment=environment)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_nested_templates_are_read_relative_to_the_file_naming_them(
        tmp_path):
    root = _write(tmp_path / "stack" / "root.yaml",
                  "heat_template_version: 2018-08-31\nresources:\n"
                  "  app: {type: lib/app.yaml}\n  tier:\n"
                  "    type: OS::Heat::ResourceGroup\n"
                  "    properties: {count: 2, resource_def: "
                  "{type: lib/app.yaml}}\n")
    _write(tmp_path / "stack" / "lib" / "app.yaml",
           "heat_template_version: 2018-08-31\nresources:\n"
           "  box: {type: ../server.yaml}\n")
    _write(tmp_path / "stack" / "server.yaml", _SERVER)
    template, files = nested_files.load_template(root)
    app = (tmp_path / "stack" / "lib" / "app.yaml").as_uri()
    server = (tmp_path / "stack" / "server.yaml").as_uri()
    # Each read once, named by its URL where it was named.
    assert sorted(files) == sorted([app, server])
    assert template["resources"]["app"]["type"] == app
    assert template["resources"]["tier"]["properties"]["resource_def"][
        "type"] == app
    assert files[app]["resources"]["box"]["type"] == server
    raw = stack_request_of(template, files)
    assert sorted(n for n, r in raw["resources"].items() if r["spec"]) == [
        "app/box/s", "tier/0/box/s", "tier/1/box/s"]


def test_environments_merge_in_order_their_templates_read_relative_to_them(
        tmp_path):
    root = _write(tmp_path / "root.yaml",
                  "heat_template_version: 2018-08-31\nresources:\n"
                  "  web: {type: My::Server}\n  db: {type: My::Db}\n")
    first = _write(tmp_path / "env" / "first.yaml",
                   "parameter_defaults: {size: m1.large}\n"
                   "resource_registry:\n  My::Server: server.yaml\n"
                   "  My::Db: OS::Nova::Server\n")
    second = _write(tmp_path / "env" / "second.yaml",
                    "parameter_defaults: {size: m1.small}\n"
                    "resource_registry:\n  My::Db: OS::Heat::None\n")
    _write(tmp_path / "env" / "server.yaml", _SERVER)
    template, files = nested_files.load_template(root)
    env = nested_files.load_environments([first, second], files)
    server = (tmp_path / "env" / "server.yaml").as_uri()
    assert env == {"parameter_defaults": {"size": "m1.small"},
                   "resource_registry": {"My::Server": server,
                                         "My::Db": "OS::Heat::None"}}
    raw = stack_request_of(template, files, env)
    assert raw["resources"]["web/s"]["spec"]["flavor"]["name"] == "m1.small"
    assert raw["resources"]["db"]["spec"] is None
    assert Stack.from_primitives(raw).order == [["db", "web/s"], ["web"]]


def test_a_registry_s_base_url_is_where_its_templates_are(tmp_path):
    _write(tmp_path / "lib" / "server.yaml", _SERVER)
    env = _write(tmp_path / "env.yaml",
                 f"resource_registry:\n  base_url: {tmp_path.as_uri()}/lib\n"
                 "  My::Server: server.yaml\n")
    files = {}
    merged = nested_files.load_environments([env], files)
    assert merged["resource_registry"]["My::Server"] == \
        (tmp_path / "lib" / "server.yaml").as_uri()
    assert list(files) == [(tmp_path / "lib" / "server.yaml").as_uri()]


def test_a_template_naming_itself_is_read_once(tmp_path):
    loop = _write(tmp_path / "loop.yaml",
                  "heat_template_version: 2018-08-31\nresources:\n"
                  "  again: {type: loop.yaml}\n")
    template, files = nested_files.load_template(loop)
    assert list(files) == [loop.as_uri()]


def test_a_remote_template_is_not_fetched(tmp_path):
    root = _write(tmp_path / "root.yaml",
                  "heat_template_version: 2018-08-31\nresources:\n"
                  "  app: {type: 'https://example.com/app.yaml'}\n")
    template, files = nested_files.load_template(root)
    assert files == {}
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources.app.type: template "
                             r"'https://example.com/app.yaml' is not among"):
        stack_request_of(template, files)


@pytest.mark.parametrize("name, text, message", [
    ("gone.yaml", None, "template {}: No such file or directory"),
    ("big.yaml", "#" * (512 * 1024 + 1),
     "template {}: larger than the 524288 bytes allowed"),
])
def test_a_nested_file_is_held_to_the_limits_of_the_template(
        tmp_path, name, text, message):
    root = _write(tmp_path / "root.yaml",
                  "heat_template_version: 2018-08-31\nresources:\n"
                  f"  app: {{type: {name}}}\n")
    if text is not None:
        _write(tmp_path / name, text)
    with pytest.raises(exception.InvalidRequest) as e:
        nested_files.load_template(root)
    assert e.value.message == message.format(tmp_path / name)


def test_an_environment_that_is_not_a_mapping_is_named(tmp_path):
    env = _write(tmp_path / "env.yaml", "- parameters\n")
    with pytest.raises(exception.InvalidRequest) as e:
        nested_files.load_environments([env], {})
    assert e.value.message == f"environment {env}: expected a mapping"
