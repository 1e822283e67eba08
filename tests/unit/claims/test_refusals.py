"""Refusals: a claim that does not fit says what the database held, by the
rule the claim's UPDATE applied."""
from __future__ import annotations

import pytest

from scheduler.claims import consume
from scheduler.claims.refusals import NoRoom
from tests.unit.claims.conftest import C1
from tests.unit.claims.conftest import claim_on
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node


def test_no_room_names_each_resource_over_its_limit(engine, nodes):
    with pytest.raises(NoRoom) as info:
        consume.claim(engine, [claim_on(nodes["h1"], C1, vcpus=9,
                                        memory_mb=9000)])
    assert info.value.node_id == nodes["h1"].id
    assert info.value.refused == {"vcpu": (0, 9, 8.0),
                                  "memory_mb": (0, 9000, 8192.0)}
    assert allocation_rows(engine) == []


def test_no_room_on_a_node_reporting_no_vcpus_is_never_for_vcpus(engine,
                                                                 nodes):
    """A node reporting 0 vCPUs is not judged on them (capacity.unjudged):
    the UPDATE lets any number through, and a claim refused for memory
    does not name vCPUs among what did not fit."""
    set_node(engine, "h1", vcpus=0)
    row = node_row(engine, "h1")
    with pytest.raises(NoRoom) as info:
        consume.claim(engine, [claim_on(row, C1, vcpus=4, memory_mb=9000)])
    assert set(info.value.refused) == {"memory_mb"}
    consume.claim(engine, [claim_on(row, C1, vcpus=4)])
    assert [a.vcpus for a in allocation_rows(engine)] == [4]
