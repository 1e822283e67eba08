"""What a move is: the one rule that tells a move from a client retry.

A select for consumers that already hold claims is either a re-send of a
request already answered (a retry: hand back what they hold) or a move of
those consumers elsewhere (cold/live migration, resize, evacuation: claim a
destination, keep the source until confirm_move / revert_move).
``doc/source/architecture.rst`` "Moves" fixes the rule; every caller (the
driver, for both RPC APIs) asks :func:`is_move`, :func:`confirmed_on_arrival`
whether the move ends when its consumer is seen on its destination, and
:func:`arrived` whether a new request says such a move is already over.
"""
from __future__ import annotations

from typing import Collection, Protocol

from scheduler.request.names import host_key
from scheduler.request.spec import RequestSpec


class HeldClaim(Protocol):
    """What a consumer holds now (a ``db.allocations.placements`` row)."""
    host: str
    hypervisor_hostname: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    source_node_id: int | None      # set while it is moving


class MoveHolding(Protocol):
    """Where a consumer's claim is (a ``db.allocations.holdings`` value)."""
    host: str
    source_host: str | None         # set while it is moving
    confirm_on_arrival: bool


def _named(host: str | None, hosts: Collection[str]) -> bool:
    """Whether ``hosts`` (a request's) name ``host``, as targeting matches
    them (:func:`scheduler.request.names.host_key`)."""
    return host is not None and host_key(host) in {
        host_key(h) for h in hosts}


def is_move(spec: RequestSpec, held: HeldClaim) -> bool:
    """Whether ``spec`` moves a consumer that holds ``held``.

    The caller's word decides when it gives one (``spec.move``, the 1.x
    API), except that a move declared for a consumer already moving may be
    the re-send of the request that started that move (our client re-sends
    a call whose reply timed out): it is decided as nova's are. Otherwise
    (nova's 4.x API, which never says) it is a move exactly when it cannot
    be a re-send of the request that made ``held``: the request ignores the
    host the consumer is on, asks for a different size (a resize), or
    names a destination elsewhere (a forced or requested host or node that
    is not the held one).
    """
    if spec.move is False:
        return False
    if spec.move and held.source_node_id is None:
        return True
    if _named(held.host, spec.ignore_hosts):
        return True
    flavor = spec.flavor
    if (flavor.vcpus, flavor.memory_mb, flavor.disk_gb) != (
            held.vcpus, held.memory_mb, held.disk_gb):
        return True
    if spec.force_hosts and not _named(held.host, spec.force_hosts):
        return True
    if spec.force_nodes and held.hypervisor_hostname not in spec.force_nodes:
        return True
    wanted = spec.requested_destination or {}
    if wanted.get("host") and not _named(held.host, [wanted["host"]]):
        return True
    if wanted.get("node") and wanted["node"] != held.hypervisor_hostname:
        return True
    return False


def confirmed_on_arrival(spec: RequestSpec) -> bool:
    """Whether a move by ``spec`` is done once its consumer is reported on
    its destination: it has no confirm step, so nothing else will give its
    source back (``scheduler.nova.casts``).

    Nova's requests alone (the 4.x API, which never says it moves:
    ``spec.move`` None); our own API's callers confirm their moves. Nova's
    conductor asks for alternates exactly for the moves that wait for the
    user's confirm or revert (resize, cold migration: migrate.py); a live
    migration, an evacuation (rebuild_instance) and an unshelve ask for
    none and end on the destination. (Below RPC 4.5 nothing says either;
    nova 34's conductor, which always asks for Selection objects, never
    sends a move below 4.5.)
    """
    return spec.move is None and not spec.return_alternates


def arrived(spec: RequestSpec, held: HeldClaim,
            holding: MoveHolding) -> bool:
    """Whether ``spec``, a new request for a consumer holding ``held``
    (where: ``holding``), says the consumer's move is over on its
    destination before a cast did.

    Nova moves an instance again only once its last move is over, and then
    ignores the host it is on (a live migration, an evacuation, a resize
    not to the same host): ignoring the move's destination, the request
    says it is over there.

    - A move with no confirm step (:func:`confirmed_on_arrival`) is over
      once it arrived, before its destination's next list says so. A
      request that ignores no host at all says so too when it is a move (a
      resize where the instance is), taken to have arrived as moves do:
      one rolled back just before is told by nothing nova sends.
    - A move that waits for the user's confirm or revert (a resize, a cold
      migration) is over only then, and nova's API moves a resized
      instance no further until it is. A request of nova's (``move``
      unsaid) ignoring the destination says it was confirmed there: the
      confirm's cast (``delete_instance_info`` from the source, sent after
      the instance is saved active on the destination) may be served
      after it, since casts and calls travel on different queues. Our own
      API's callers confirm their moves themselves, and one ignoring the
      destination moves away from it.

    A request ignoring the move's source is a re-try of that move itself
    (nova's live migration and evacuation always ignore it) or a new move
    after a revert: either way the consumer never left.
    """
    if holding.source_host is None or _named(holding.source_host,
                                             spec.ignore_hosts):
        return False
    if holding.confirm_on_arrival:
        return _named(holding.host, spec.ignore_hosts) or is_move(spec, held)
    return spec.move is None and _named(holding.host, spec.ignore_hosts)
