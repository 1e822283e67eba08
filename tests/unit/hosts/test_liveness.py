"""One rule for "is the service up", asked by the host manager (which hosts
are down, in SQL) and by the admin commands (each service's state)."""
from __future__ import annotations

import datetime

import pytest

from scheduler.admin import compute_hosts
from scheduler.hosts import liveness
from scheduler.db import clock
from tests.unit.fakes import node
from tests.unit.fakes import set_service


@pytest.mark.parametrize("forced_down, age, up", [
    (False, 0.0, True), (False, 60.0, True), (False, 60.5, False),
    (False, None, False), (True, 0.0, False)])
def test_is_up(forced_down, age, up):
    assert liveness.is_up(forced_down, age, 60) is up


@pytest.mark.parametrize("seconds_ago, forced", [
    (0, False), (30, False), (59, False), (61, False), (3600, False),
    (0, True)])
def test_down_hosts_and_the_admin_state_agree(register, engine,
                                              seconds_ago, forced):
    register(node("h1"), node("h2"))
    with engine.connect() as conn:
        now = clock.db_time(conn)
    set_service(engine, "h1", forced_down=forced,
                last_seen_up=now - datetime.timedelta(seconds=seconds_ago))
    with engine.connect() as conn:
        down = liveness.down_hosts(conn, 60)
    states = {h["host"]: h["state"]
              for h in compute_hosts.list_compute_hosts(engine, 60, "nova")}
    assert states == {h: "down" if h in down else "up" for h in states}
    assert ("h1" in down) == (forced or seconds_ago > 60)
    assert "h2" not in down
