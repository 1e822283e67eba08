"""scheduler.cmd.client_request: the request spec built from
scheduler-client's flags."""
from __future__ import annotations

from typing import Any

from scheduler.cmd import client_parser
from scheduler.cmd import client_request
from scheduler.request.spec import RequestSpec

UUID1 = "0b0a2d4e-7b0c-4a43-9e8f-1f6d1d0b6c01"
UUID2 = "0b0a2d4e-7b0c-4a43-9e8f-1f6d1d0b6c02"


def spec_of(*argv: str) -> dict[str, Any]:
    return client_request.build_spec(
        client_parser.parse_args(["select", *argv]))


def test_build_spec_defaults():
    assert spec_of() == {
        "flavor": {"name": None, "memory_mb": 512, "vcpus": 1,
                   "root_gb": 1, "ephemeral_gb": 0, "swap": 0,
                   "extra_specs": {}},
        "num_instances": 1,
        "project_id": None, "user_id": None, "image": None,
        "availability_zone": None, "ignore_hosts": [], "force_hosts": [],
        "force_nodes": [], "scheduler_hints": {}, "instance_group": None,
        "return_alternates": False,
    }


def test_build_spec_defaults_pass_the_server_schema():
    parsed = RequestSpec.from_primitives(spec_of())
    assert parsed.num_instances == 1
    assert parsed.flavor.memory_mb == 512


def test_build_spec_flavor_flags():
    spec = spec_of("--flavor-name", "m1.large", "--memory-mb", "8192",
                   "--vcpus", "4", "--root-gb", "80", "--ephemeral-gb", "10",
                   "--swap", "1024")
    assert spec["flavor"] == {"name": "m1.large", "memory_mb": 8192,
                              "vcpus": 4, "root_gb": 80, "ephemeral_gb": 10,
                              "swap": 1024, "extra_specs": {}}


def test_build_spec_extra_specs_last_wins():
    spec = spec_of("--extra-spec", "hw:cpu_policy=dedicated",
                   "--extra-spec", "aggregate_instance_extra_specs:ssd=true",
                   "--extra-spec", "hw:cpu_policy=shared")
    assert spec["flavor"]["extra_specs"] == {
        "hw:cpu_policy": "shared",
        "aggregate_instance_extra_specs:ssd": "true"}


def test_build_spec_num_instances():
    spec = spec_of("--num-instances", "5")
    assert spec["num_instances"] == 5
    assert "instance_uuids" not in spec


def test_build_spec_instance_uuids():
    spec = spec_of("--instance-uuid", UUID1, "--instance-uuid", UUID2)
    assert spec["instance_uuids"] == [UUID1, UUID2]
    assert "num_instances" not in spec


def test_build_spec_availability_zone_project_user():
    spec = spec_of("--availability-zone", "az1", "--project-id", "p1",
                   "--user-id", "u1")
    assert spec["availability_zone"] == "az1"
    assert spec["project_id"] == "p1"
    assert spec["user_id"] == "u1"


def test_build_spec_single_hint_is_a_string():
    spec = spec_of("--hint", "same_host=" + UUID1,
                   "--hint", "query=[\">=\", \"$free_ram_mb\", 1024]")
    assert spec["scheduler_hints"] == {
        "same_host": UUID1, "query": "[\">=\", \"$free_ram_mb\", 1024]"}


def test_build_spec_repeated_hint_becomes_a_list():
    spec = spec_of("--hint", f"different_host={UUID1}",
                   "--hint", "group=g1",
                   "--hint", f"different_host={UUID2}",
                   "--hint", "different_host=third")
    assert spec["scheduler_hints"] == {
        "different_host": [UUID1, UUID2, "third"], "group": "g1"}


def test_build_spec_hint_value_may_be_empty():
    assert spec_of("--hint", "k=")["scheduler_hints"] == {"k": ""}


def test_build_spec_host_lists():
    spec = spec_of("--force-host", "h1", "--force-host", "h2",
                   "--force-node", "n1", "--ignore-host", "h3",
                   "--ignore-host", "h4")
    assert spec["force_hosts"] == ["h1", "h2"]
    assert spec["force_nodes"] == ["n1"]
    assert spec["ignore_hosts"] == ["h3", "h4"]


def test_build_spec_image_properties():
    spec = spec_of("--image-property", "hw_architecture=x86_64",
                   "--image-property", "img_hv_type=kvm")
    assert spec["image"] == {"properties": {"hw_architecture": "x86_64",
                                            "img_hv_type": "kvm"}}


def test_build_spec_group_policy_and_uuid():
    spec = spec_of("--group-policy", "anti-affinity", "--group-uuid", UUID1)
    assert spec["instance_group"] == {"policies": ["anti-affinity"],
                                      "uuid": UUID1}


def test_build_spec_group_policy_alone():
    spec = spec_of("--group-policy", "soft-affinity")
    assert spec["instance_group"] == {"policies": ["soft-affinity"]}


def test_build_spec_group_members():
    spec = spec_of("--group-policy", "anti-affinity", "--group-member",
                   UUID1, "--group-member", UUID2)
    assert spec["instance_group"] == {"policies": ["anti-affinity"],
                                      "members": [UUID1, UUID2]}
    assert RequestSpec.from_primitives(spec).instance_group.members == (
        UUID1, UUID2)


def test_build_spec_aggregates():
    spec = spec_of("--aggregate", "gpu,ssd", "--aggregate", "rack1")
    assert spec["requested_destination"] == {"aggregates": ["gpu,ssd",
                                                            "rack1"]}
    assert RequestSpec.from_primitives(spec).required_aggregates() == (
        frozenset({"gpu", "ssd"}), frozenset({"rack1"}))
    assert "requested_destination" not in spec_of()


def test_build_spec_return_alternates():
    assert spec_of("--return-alternates")["return_alternates"] is True
    rank = client_request.build_spec(client_parser.parse_args(["rank"]))
    assert rank["return_alternates"] is False


def test_build_spec_with_every_flag_passes_the_server_schema():
    spec = spec_of(
        "--flavor-name", "m1", "--memory-mb", "1024", "--vcpus", "2",
        "--root-gb", "10", "--ephemeral-gb", "1", "--swap", "512",
        "--extra-spec", "a=b", "--instance-uuid", UUID1,
        "--availability-zone", "az1", "--hint", "x=1", "--hint", "x=2",
        "--force-host", "h1", "--force-node", "n1", "--ignore-host", "h2",
        "--project-id", "p", "--user-id", "u", "--image-property", "k=v",
        "--group-policy", "affinity", "--group-uuid", UUID2,
        "--return-alternates")
    parsed = RequestSpec.from_primitives(spec)
    assert parsed.instance_uuids == (UUID1,)
    assert parsed.scheduler_hints == {"x": ["1", "2"]}
    assert parsed.instance_group.policy == "affinity"
    assert parsed.image == {"properties": {"k": "v"}}
    assert parsed.flavor.disk_gb == 12
