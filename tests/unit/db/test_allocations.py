"""Where claims are: the read-only allocation queries, on claims made
for them."""
from __future__ import annotations

import uuid as uuidlib

import pytest

from scheduler.claims import consume
from scheduler.claims import lifecycle
from scheduler.db import allocations
from tests.unit.claims.conftest import add_node
from tests.unit.claims.conftest import C1
from tests.unit.claims.conftest import C2
from tests.unit.claims.conftest import C3
from tests.unit.claims.conftest import C4
from tests.unit.claims.conftest import C5
from tests.unit.claims.conftest import claim_on
from tests.unit.claims.conftest import G
from tests.unit.claims.conftest import G2
from tests.unit.claims.conftest import member
from tests.unit.claims.conftest import node_now
from tests.unit.claims.conftest import two_nodes


@pytest.fixture
def nodes(register, engine):
    return two_nodes(register, engine)


def test_placements(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1, vcpus=3)])
    held = allocations.placements(engine, [C1, C2])
    assert set(held) == {C1}
    row = held[C1]
    assert (row.host, row.hypervisor_hostname, row.node_uuid, row.vcpus,
            row.memory_mb, row.disk_gb) == (
        "h1", "h1", nodes["h1"].uuid, 3, 1024, 10)
    assert allocations.placements(engine, [C2]) == {}


def test_group_hosts(engine, nodes):
    other = add_node(engine, "h1", "h1-b")
    consume.claim(engine, [member(engine, "h1", C1),
                          claim_on(other, C2, group_uuid=G),
                          member(engine, "h2", C3),
                          member(engine, "h2", C4, group=G2),
                          claim_on(node_now(engine, "h2"), C5)])
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h1": 2, "h2": 1}
        assert allocations.group_hosts(conn, G2) == {"h2": 1}
        assert allocations.group_hosts(conn, "no-such-group") == {}
    lifecycle.release(engine, [C1, C3])
    with engine.connect() as conn:
        assert allocations.group_hosts(conn, G) == {"h1": 1}


def test_consumer_hosts(engine, nodes):
    other = add_node(engine, "h1", "h1-b")
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(other, C2),
                          claim_on(node_now(engine, "h2"), C3)])
    unknown = str(uuidlib.uuid4())
    with engine.connect() as conn:
        assert allocations.consumer_hosts(conn, [C1, C2, C3, unknown, C1]) == {
            C1: ("h1",), C2: ("h1",), C3: ("h2",)}
        assert allocations.consumer_hosts(conn, [C1, C3], exclude=[C3]) == {
            C1: ("h1",)}
        assert allocations.consumer_hosts(conn, []) == {}
    lifecycle.release(engine, [C1])
    with engine.connect() as conn:
        assert allocations.consumer_hosts(conn, [C1, C2]) == {C2: ("h1",)}
