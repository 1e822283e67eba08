"""scheduler.decide.selection: the claim a Selection makes and the
destination the answer carries for it, or for a claim already held."""
from __future__ import annotations

import types

from scheduler.decide.selection import destination
from scheduler.decide.selection import held_destination
from scheduler.decide.selection import Selection
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec

NODE = "9b1c7f6e-0000-4000-8000-000000000001"
U = "1a2b3c4d-0000-4000-8000-000000000001"
G = "5a0b0c0d-0000-4000-8000-0000000000a1"


def _selection(**kw) -> Selection:
    return Selection(U, make_host("h1", nodename="n1", node_id=7,
                                  uuid=NODE, generation=4),
                     limits={"memory_mb": 8192.0}, **kw)


def test_the_claim_is_the_flavor_on_the_node_at_the_generation_read():
    spec = make_spec(instance_uuids=[U],
                     instance_group={"uuid": G,
                                     "policies": ["anti-affinity"]})
    claim = _selection().claim(spec)
    assert (claim.node_id, claim.host, claim.generation) == (7, "h1", 4)
    assert (claim.vcpus, claim.memory_mb, claim.disk_gb) == (
        spec.flavor.vcpus, spec.flavor.memory_mb, spec.flavor.disk_gb)
    assert claim.group_uuid == G
    assert claim.limits == {"memory_mb": 8192.0}


def test_a_destination_names_host_node_and_allocation():
    spec = make_spec(instance_uuids=[U])
    assert destination(spec, _selection()) == {
        "host": "h1", "nodename": "n1", "uuid": U,
        "limits": {"memory_mb": 8192.0},
        "allocation": {"compute_node_uuid": NODE,
                       "vcpus": spec.flavor.vcpus,
                       "memory_mb": spec.flavor.memory_mb,
                       "disk_gb": spec.flavor.disk_gb}}


def test_alternates_are_in_the_destination_only_when_asked_for():
    spec = make_spec(instance_uuids=[U])
    assert "alternates" not in destination(spec, _selection())
    alternates = [{"host": "h2", "nodename": "h2"}]
    assert destination(spec, _selection(alternates=alternates))[
        "alternates"] == alternates


def test_a_held_claim_answers_with_its_own_size_and_no_limits():
    row = types.SimpleNamespace(
        host="h1", hypervisor_hostname="n1", consumer_uuid=U,
        node_uuid=NODE, vcpus=2, memory_mb=2048, disk_gb=20)
    assert held_destination(row) == {
        "host": "h1", "nodename": "n1", "uuid": U, "limits": {},
        "allocation": {"compute_node_uuid": NODE, "vcpus": 2,
                       "memory_mb": 2048, "disk_gb": 20}}
