"""Operator actions on services and nodes."""
from __future__ import annotations

import pytest

from scheduler import admin
from scheduler import exception
from tests.unit.fakes import node
from tests.unit.fakes import set_service


def test_disable_and_enable(register, engine, host_manager):
    register(node("h1"), node("h2"))
    admin.set_service_disabled(engine, "h1", True, "broken disk")
    services = {s["host"]: s for s in admin.list_services(engine)}
    assert services["h1"]["disabled"] is True
    assert services["h1"]["disabled_reason"] == "broken disk"
    assert services["h2"]["disabled"] is False
    states = {s.host: s for s in host_manager.host_states()}
    assert states["h1"].service_disabled is True

    admin.set_service_disabled(engine, "h1", False, "ignored")
    services = {s["host"]: s for s in admin.list_services(engine)}
    assert services["h1"]["disabled"] is False
    assert services["h1"]["disabled_reason"] is None


def test_set_service_disabled_unknown_host(register, engine):
    register(node("h1"))
    with pytest.raises(exception.NotFound) as info:
        admin.set_service_disabled(engine, "nope", True)
    assert "nope" in info.value.message


def test_set_service_disabled_deleted_or_other_binary(register, engine):
    register(node("gone"), node("conductor"))
    set_service(engine, "gone", deleted=1)
    set_service(engine, "conductor", binary="nova-conductor")
    for host in ("gone", "conductor"):
        with pytest.raises(exception.NotFound):
            admin.set_service_disabled(engine, host, True)


def test_list_services(register, engine):
    register(node("b"), node("a"))
    set_service(engine, "b", forced_down=True)
    services = admin.list_services(engine)
    assert [s["host"] for s in services] == ["a", "b"]
    assert services[1]["forced_down"] is True
    assert all(0 <= s["heartbeat_age"] < 60 for s in services)


def test_list_nodes(register, engine):
    register(node("h2", vcpus=4), node("h1", vcpus=8, ram_ratio=1.5))
    nodes = admin.list_nodes(engine)
    assert [n["host"] for n in nodes] == ["h1", "h2"]
    assert nodes[0]["vcpus"] == 8
    assert nodes[0]["ram_allocation_ratio"] == 1.5
    assert nodes[0]["generation"] == 0
