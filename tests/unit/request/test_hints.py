"""Scheduler hints naming a server group, checked and normalized."""
from __future__ import annotations

import pytest

from scheduler import exception
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import FLAVOR
from tests.unit.fakes import spec_dict


# --- scheduler_hints.group ------------------------------------------------------

G = "bbbbbbbb-0000-4000-8000-000000000002"


def test_group_hint_names_the_uuid_of_a_group_given_without_one():
    spec = RequestSpec.from_primitives(spec_dict(
        scheduler_hints={"group": [G.upper()]},
        instance_group={"policies": ["anti-affinity"]}))
    assert spec.instance_group.uuid == G


def test_group_hint_agreeing_with_instance_group_is_accepted():
    spec = RequestSpec.from_primitives(spec_dict(
        scheduler_hints={"group": G},
        instance_group={"uuid": G.upper(), "policies": ["affinity"]}))
    assert spec.instance_group.uuid == G


def test_instance_group_uuid_is_canonical():
    spec = RequestSpec.from_primitives(spec_dict(instance_group={
        "uuid": G.upper().replace("-", ""), "policies": ["affinity"]}))
    assert spec.instance_group.uuid == G


@pytest.mark.parametrize("hints,group,text", [
    ({"group": G}, None, "the server group's policy is not known here"),
    ({"group": "my-group"}, {"policies": ["affinity"]},
     "'my-group' is not a server group uuid"),
    ({"group": G}, {"uuid": "cccccccc-0000-4000-8000-000000000003",
                    "policies": ["affinity"]},
     f"{G} is not instance_group.uuid"),
])
def test_group_hint_that_cannot_be_honoured_is_rejected(hints, group, text):
    with pytest.raises(exception.InvalidRequest) as caught:
        RequestSpec.from_primitives(spec_dict(scheduler_hints=hints,
                                              instance_group=group))
    assert caught.value.message.startswith(
        f"spec.scheduler_hints.group: {text}")


def test_legacy_group_takes_its_uuid_from_the_hint():
    spec = RequestSpec.from_legacy(
        {"instance_type": dict(FLAVOR), "instance_properties": {}},
        {"group_policies": ["anti-affinity"], "group_hosts": ["h1"],
         "scheduler_hints": {"group": G}})
    assert (spec.instance_group.uuid, spec.instance_group.hosts) == (
        G, ("h1",))
