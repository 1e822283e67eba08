"""scheduler.admin.services: list services, disable and enable a compute
service, and the up/down state shown."""
from __future__ import annotations

import pytest

from scheduler.admin import services
from scheduler import exception
from tests.unit.fakes import node
from tests.unit.fakes import set_service


def test_disable_and_enable(register, engine, host_manager):
    register(node("h1"), node("h2"))
    services.set_service_disabled(engine, "h1", True, "broken disk")
    listed = {s["host"]: s for s in services.list_services(engine)}
    assert listed["h1"]["disabled"] is True
    assert listed["h1"]["disabled_reason"] == "broken disk"
    assert listed["h2"]["disabled"] is False
    states = {s.host: s for s in host_manager.host_states()}
    assert states["h1"].service_disabled is True

    services.set_service_disabled(engine, "h1", False, "ignored")
    listed = {s["host"]: s for s in services.list_services(engine)}
    assert listed["h1"]["disabled"] is False
    assert listed["h1"]["disabled_reason"] is None


def test_set_service_disabled_unknown_host(register, engine):
    register(node("h1"))
    with pytest.raises(exception.NotFound) as info:
        services.set_service_disabled(engine, "nope", True)
    assert "nope" in info.value.message


def test_set_service_disabled_deleted_or_other_binary(register, engine):
    register(node("gone"), node("conductor"))
    set_service(engine, "gone", deleted=1)
    set_service(engine, "conductor", binary="nova-conductor")
    for host in ("gone", "conductor"):
        with pytest.raises(exception.NotFound):
            services.set_service_disabled(engine, host, True)


def test_list_services(register, engine):
    register(node("b"), node("a"))
    set_service(engine, "b", forced_down=True)
    listed = services.list_services(engine)
    assert [s["host"] for s in listed] == ["a", "b"]
    assert listed[1]["forced_down"] is True
    assert all(0 <= s["heartbeat_age"] < 60 for s in listed)


@pytest.mark.parametrize("forced_down, age, down_time, state", [
    (False, 0.0, 60, "up"), (False, 60.0, 60, "up"),
    (False, 60.5, 60, "down"), (True, 0.0, 60, "down"),
    (False, None, 60, "down")])
def test_service_state(forced_down, age, down_time, state):
    assert services.service_state(forced_down, age, down_time) == state
