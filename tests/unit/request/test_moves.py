"""moves: a move or a re-send of the request that made the claim, and
whether a move with no confirm step is over."""
from __future__ import annotations

import dataclasses
import types

from scheduler.request import moves
from scheduler.request.spec import RequestSpec

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


def test_a_request_names_the_held_host_in_any_case():
    # Host names match without regard to case (as targeting matches them,
    # and nova's host_manager ignore_hosts and force_hosts): a move that
    # ignores the host a consumer is moving to, spelled in another case,
    # is no re-send answered with that host.
    moving = _held("h2", source_node_id=1)
    assert moves.is_move(_spec(move=True, ignore_hosts=["h1", "H2"]),
                         moving)
    assert not moves.is_move(_spec(move=True, ignore_hosts=["H1"]), moving)
    assert not moves.is_move(_spec(move=True, force_hosts=["H2"]), moving)
    assert not moves.is_move(_spec(move=True, requested_destination={
        "host": "H2"}), moving)


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


def _live_migrated(confirm_on_arrival: bool = True):
    """A consumer live-migrated from h1 to h2, its claim still moving."""
    return (_held("h2", source_node_id=1),
            types.SimpleNamespace(host="h2", source_host="h1",
                                  confirm_on_arrival=confirm_on_arrival))


def _nova(**fields) -> RequestSpec:
    return dataclasses.replace(_spec(**fields), move=None)


def test_a_request_ignoring_where_a_live_migration_went_says_it_arrived():
    held, holding = _live_migrated()
    assert moves.arrived(_nova(ignore_hosts=["h2"]), held, holding)


def test_a_request_ignoring_where_a_resize_went_says_it_was_confirmed():
    """Nova's API moves a resized instance no further until it is
    confirmed or reverted, and then ignores the host it is on: the
    destination, once confirmed (the confirm's cast may come later)."""
    held, holding = _live_migrated(confirm_on_arrival=False)
    assert moves.arrived(_nova(ignore_hosts=["h2"]), held, holding)
    # Reverted: nova ignores the source. Ignoring nothing
    # (allow_resize_to_same_host) says neither.
    assert not moves.arrived(_nova(ignore_hosts=["h1"]), held, holding)
    assert not moves.arrived(
        _nova(flavor={**FLAVOR, "memory_mb": 2048}), held, holding)
    # Our own API's caller confirms its moves: ignoring the destination,
    # it moves away from it.
    assert not moves.arrived(_spec(move=True, ignore_hosts=["h2"]), held,
                             holding)


def test_a_resize_in_place_ignoring_no_host_says_it_arrived():
    held, holding = _live_migrated()
    resize = {**FLAVOR, "memory_mb": 2048}
    assert moves.arrived(_nova(flavor=resize), held, holding)
    # The same request as the live migration's, ignoring nothing: a
    # re-send, not a new move.
    assert not moves.arrived(_nova(), held, holding)


def test_the_live_migrations_own_re_try_ignoring_its_source_never_left():
    held, holding = _live_migrated()
    assert not moves.arrived(_nova(ignore_hosts=["h1", "h2"]), held,
                             holding)
    assert not moves.arrived(_nova(ignore_hosts=["h1"]), held, holding)
