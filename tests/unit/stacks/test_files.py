"""Reading the template's YAML and the flavors file, mistakes named with
the file."""
import pytest

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
