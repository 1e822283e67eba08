"""moves.is_move: a move, or a re-send of the request that made the claim."""
from __future__ import annotations

import dataclasses
import types

from scheduler import moves
from scheduler.request_spec import RequestSpec

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}


def _held(host: str, source_node_id: int | None = None):
    return types.SimpleNamespace(
        host=host, hypervisor_hostname=host, vcpus=1, memory_mb=1024,
        disk_gb=10, source_node_id=source_node_id)


def _spec(**fields) -> RequestSpec:
    return RequestSpec.from_primitives({"flavor": FLAVOR, **fields})


def test_a_declared_move_moves_a_consumer_not_moving_yet():
    assert moves.is_move(_spec(move=True), _held("h1"))
    assert not moves.is_move(_spec(move=False, ignore_hosts=["h1"]),
                             _held("h1"))


def test_a_declared_move_re_sent_gets_the_move_it_made():
    moving = _held("h2", source_node_id=1)
    # The same request again: its destination is where the claim is.
    assert not moves.is_move(_spec(move=True, ignore_hosts=["h1"]), moving)
    # Not satisfied by where it is moving: a move again.
    assert moves.is_move(_spec(move=True, ignore_hosts=["h1", "h2"]),
                         moving)
    assert moves.is_move(_spec(move=True, requested_destination={
        "host": "h3"}), moving)


def test_only_novas_moves_without_alternates_are_done_on_arrival():
    # live_migrate.py, rebuild_instance (evacuate) and unshelve ask for no
    # alternates and have no confirm step; migrate.py (resize, cold
    # migration) asks for them and waits for the user's confirm.
    # Nova never says it moves (its endpoint leaves ``move`` None).
    assert moves.confirmed_on_arrival(
        dataclasses.replace(_spec(), move=None))
    assert not moves.confirmed_on_arrival(
        dataclasses.replace(_spec(return_alternates=True), move=None))
    # Our own API's callers confirm their moves themselves.
    assert not moves.confirmed_on_arrival(_spec(move=True))
