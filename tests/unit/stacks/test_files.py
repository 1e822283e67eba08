"""Reading the template's YAML and the flavors file, mistakes named with
the file."""
import pytest
import yaml

from scheduler import exception
from scheduler.stacks import files
from tests.unit.stacks.conftest import FLAVORS


def test_nova_flavors_are_the_default_flavors():
    assert FLAVORS["m1.tiny"] == {"name": "m1.tiny", "flavorid": "1",
                                  "memory_mb": 512, "vcpus": 1,
                                  "root_gb": 1}
    assert sorted(FLAVORS) == ["m1.large", "m1.medium", "m1.small",
                               "m1.tiny", "m1.xlarge"]


def test_unreadable_files_are_named(tmp_path):
    with pytest.raises(exception.InvalidRequest,
                       match=r"^template .*missing.yaml: No such file"):
        files.load_yaml(tmp_path / "missing.yaml", "template")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n")
    with pytest.raises(exception.InvalidRequest,
                       match=r"^template .*bad.yaml: not valid YAML"):
        files.load_yaml(bad, "template")
    bad.write_text("- 1\n")
    with pytest.raises(exception.InvalidRequest,
                       match=r"^flavors file .*: expected a mapping"):
        files.load_flavors(bad)


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    # Latin-1 "café": the decode error came out of yaml.safe_load as a
    # UnicodeDecodeError naming neither the file nor what it was for.
    path = tmp_path / "shop.yaml"
    path.write_bytes(b"heat_template_version: 2018-08-31\nresources:\n"
                     b"  caf\xe9: {type: OS::Nova::Server}\n")
    with pytest.raises(exception.InvalidRequest) as e:
        files.load_yaml(path, "template")
    assert e.value.message == f"template {path}: not UTF-8 text"


def laughs(levels: int, fan: int, indent: str = "") -> str:
    """YAML anchoring ``x0`` and each ``xN`` as ``fan`` aliases of
    ``x(N-1)``: a few hundred bytes naming ``fan ** levels`` lols."""
    lines = [f"{indent}x0: &a0 [lol]"] + [
        f"{indent}x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]"
        for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_a_file_over_the_size_cap_is_refused_before_it_is_parsed(
        tmp_path, monkeypatch):
    # A 50 MB template was still being parsed after 60 s and 896 MB; the
    # cap is Heat's max_template_size, 512 KB. A comment: valid YAML.
    path = tmp_path / "big.yaml"
    path.write_text("#" * (512 * 1024 - 1) + "\n")
    assert files.load_yaml(path, "template") is None
    path.write_text("#" * (512 * 1024) + "\n")

    def parse(*args):
        raise AssertionError("parsed")
    monkeypatch.setattr(yaml.reader.Reader, "__init__", parse)
    with pytest.raises(exception.InvalidRequest) as e:
        files.load_yaml(path, "template")
    assert e.value.message == (f"template {path}: larger than the 524288 "
                               f"bytes allowed")


def test_an_alias_bomb_is_refused_as_it_loads(tmp_path):
    # Loaded, 9 levels of 10 aliases are a few objects shared; the
    # template's resolution (or the request's JSON) copied them to 10**9
    # values: 1.9 GB and still going at 60 s. Refused once it is known
    # to expand past the limit, in what the limit costs.
    path = tmp_path / "lol.yaml"
    path.write_text("heat_template_version: 2018-08-31\nresources:\n"
                    "  net:\n    type: OS::Neutron::Net\n"
                    "    properties:\n" + laughs(9, 10, " " * 6))
    with pytest.raises(exception.InvalidRequest) as e:
        files.load_yaml(path, "template")
    assert e.value.message == (
        f"template {path}: expands to more than 262144 values (YAML "
        f"aliases and get_param repeat what they name)")


def test_the_flavors_file_is_held_to_the_same_limits(tmp_path):
    # Its fields go into each server's spec, serialized in the request.
    path = tmp_path / "flavors.yaml"
    path.write_text("m1.lol:\n  memory_mb: 1\n  extra_specs:\n"
                    + laughs(9, 10, " " * 4))
    with pytest.raises(exception.InvalidRequest,
                       match=rf"^flavors file {path}: expands to more "
                             rf"than 262144 values"):
        files.load_flavors(path)


def test_a_list_nested_too_deep_is_refused_naming_the_file(tmp_path):
    # 100,000 deep ended in "RecursionError: maximum recursion depth
    # exceeded", naming neither the file nor the limit.
    # The limit is 100 below the top: the 100th list is the last.
    path = tmp_path / "deep.yaml"
    path.write_text("deep: " + "[" * 100 + "]" * 100 + "\n")
    deepest: list = []
    for _ in range(99):
        deepest = [deepest]
    assert files.load_yaml(path, "template") == {"deep": deepest}
    for depth in (100_000, 101):
        path.write_text("deep: " + "[" * depth + "]" * depth + "\n")
        with pytest.raises(exception.InvalidRequest) as e:
            files.load_yaml(path, "template")
        assert e.value.message == \
            f"template {path}: nested more than 100 deep"


def test_aliases_nested_too_deep_are_refused_naming_the_file(tmp_path):
    # As deep through aliases, each a line: never deep as YAML is
    # composed, deep once copied.
    path = tmp_path / "deep.yaml"
    path.write_text("d0: &d0 [end]\n" + "".join(
        f"d{i}: &d{i} [*d{i - 1}]\n" for i in range(1, 5000)))
    with pytest.raises(exception.InvalidRequest) as e:
        files.load_yaml(path, "template")
    assert e.value.message == f"template {path}: nested more than 100 deep"


@pytest.mark.parametrize("text, line, problem", [
    ("resources:\n  web:\n    type: OS::Nova::Server: x\n",
     3, "mapping values are not allowed here"),
    ("resources:\n\tweb: {}\n", 2,
     "found character '\\t' that cannot start any token"),
    ("a: [1,\n", 2, "expected the node content, but found '<stream end>'"),
])
def test_a_yaml_error_says_what_is_wrong_on_its_line(tmp_path, text, line,
                                                     problem):
    # "not valid YAML (line 4)" named the line only.
    path = tmp_path / "web.yaml"
    path.write_text(text)
    with pytest.raises(exception.InvalidRequest) as e:
        files.load_yaml(path, "template")
    assert e.value.message == (f"template {path}: not valid YAML (line "
                               f"{line}: {problem})")


def test_text_is_held_to_the_limits_of_a_file():
    # A nested template as Heat keeps it: text, not a file.
    assert files.parse_yaml("a: [1]\n", "template app.yaml") == {"a": [1]}
    for text, problem in (
            ("#" * (512 * 1024) + "\n", "larger than the 524288 bytes "
                                        "allowed"),
            ("deep: " + "[" * 101 + "]" * 101, "nested more than 100 deep"),
            ("x: \udc80\n", "not UTF-8 text"),
            ("a: [1,\n", "not valid YAML (line 2: expected the node "
                         "content, but found '<stream end>')")):
        with pytest.raises(exception.InvalidRequest) as e:
            files.parse_yaml(text, "template app.yaml")
        assert e.value.message == f"template app.yaml: {problem}"
