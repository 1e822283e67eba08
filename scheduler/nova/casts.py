"""Nova's fanout casts about instances, turned into claim life-cycle steps.

Nova's computes never call ``confirm`` or ``release``; what they do is tell
every scheduler where instances are (``update_instance_info``,
``sync_instance_info``) and when one left a host
(``delete_instance_info``). ``doc/source/architecture.rst`` "Nova's own
conductor as a client" maps that onto our claims:

- an instance **seen** on the host its claim is on confirms the claim (it
  no longer expires); seen on the destination of its move, it confirms
  the destination and keeps the source (a resize waits for the user's
  confirm or revert), unless the move has no confirm step (claimed
  ``confirm_on_arrival``: nova's live migration and evacuation, which no
  cast ever confirms): then it confirms the move, giving the source back;
  seen on another host while not moving, its claim
  moves there (nova's conductor re-tried a failed build on an alternate
  host without asking a scheduler, or evacuated to a forced host) — or,
  reported resized on the destination of its resize that expired during
  the disk copy, the resize comes back (``claims.moves.relocate``) — and so
  does one left on a deleted node of its host (the node re-created under
  a new uuid); seen on a third host while moving, the destination of its
  move moves there (a resize re-tried on an alternate host) and the source
  stays held;
- an instance **gone** from the host of its claim releases it; gone from
  the source of its move confirms the move (nova's resize confirm sends
  exactly this from the source), or the instance was deleted after a
  revert nobody saw (a same-cell revert casts nothing, and one on the same
  host is never seen): the destination claim is then provisional until
  its host reports the instance; gone from the destination reverts the
  move (a revert, or the instance deleted there: the source claim is then
  provisional again until the source reports the instance); a move with
  no confirm step is never confirmed or undone by a cast, so gone from
  either side, the instance was deleted or shelve-offloaded: both sides
  are released.

Being reported on the source of a move says nothing by itself: nova
lists a moving instance there until it arrives, and reports a
live-migrating one there both before it leaves and after it has left (such
a report, in task state ``migrating``, is not read at all: it can be
served after a later move was claimed). Only a host's own periodic list
(``sync_instance_info``) naming it on its source *after* its destination
was confirmed means the move was reverted. Unlisted claims are left alone:
an instance being built is not listed yet.
"""
from __future__ import annotations

from typing import Any, Callable, Collection

import sqlalchemy as sa

from scheduler.claims import lifecycle
from scheduler.claims import moves
from scheduler.db import allocations
from scheduler.db.allocations import Holding
from scheduler import exception
from scheduler.nova import primitives
from scheduler.request.names import canonical_uuid

#: At most this many instances per cast; a compute with more is not real.
MAX_INSTANCES = 10000

#: How a cast runs each of its transactions: as it is, or retried
#: (:func:`scheduler.db.retry.for_conf`). Each step is retried alone, never
#: the cast: a step whose COMMIT's reply was lost is done, and the cast
#: read again would take the claim as that step left it for another case
#: (a same-host resize confirmed, read again, is an instance gone from the
#: host of its claim: released). Each step acts only on claims still in
#: the state it expects, so a step made again changes nothing.
Retry = Callable[[Callable[..., Any]], Callable[..., Any]]


def _once(func: Callable[..., Any]) -> Callable[..., Any]:
    """A :data:`Retry` that does not retry."""
    return func


#: The ``vm_state`` finish_resize reports an instance in on its resize's
#: destination (nova's ``vm_states.RESIZED``): the resize waits for its
#: confirm or revert.
RESIZED = "resized"

#: The ``task_state`` of an instance being live-migrated (nova's
#: ``task_states.MIGRATING``). Only its source reports it so: before it
#: leaves, and in ``_post_live_migration``, after it has left, from the
#: source's own copy of the instance (still naming the source). That last
#: report can be served after a later move of the instance was claimed
#: (a cast and a call travel on different queues): taken as where the
#: instance runs, it would pull that claim back onto the host it left.
MIGRATING = "migrating"


def instances_reported(instance_info: Any, host_name: str
                       ) -> tuple[dict[str, str], frozenset[str]]:
    """(instance uuid -> host, the uuids reported resized) for an
    ``update_instance_info`` cast's ``Instance`` or ``InstanceList``
    primitive, read in one pass (a compute's ``init_host`` reports every
    instance it has). An instance's own ``host`` field, when it has one,
    wins over the reporting host. Resized means in :data:`RESIZED`:
    finish_resize's report, not another's. An instance being
    live-migrated (task state :data:`MIGRATING`) is left out: its source's
    report says nothing about where it runs. Uuids are as claims store them
    (MariaDB's comparison ignores case, so another spelling would find a
    claim under a key not asked for).

    :raises InvalidRequest: not such a primitive, or a uuid that is none.
    """
    where, resized = {}, set()
    for uuid, data in _instances(instance_info):
        if data.get("task_state") == MIGRATING:
            continue
        host = data.get("host")
        where[uuid] = host if isinstance(host, str) and host else host_name
        if data.get("vm_state") == RESIZED:
            resized.add(uuid)
    return where, frozenset(resized)


def _instances(instance_info: Any) -> list[tuple[str, dict]]:
    """(canonical uuid, fields) of each instance of an ``Instance`` or
    ``InstanceList`` primitive (see :func:`instances_reported`)."""
    if isinstance(instance_info, dict) and instance_info.get(
            "nova_object.name") == "InstanceList":
        objects = primitives.unwrap(instance_info, "InstanceList",
                                    "instance_info").get("objects") or []
    else:
        objects = [instance_info]
    if not isinstance(objects, list) or len(objects) > MAX_INSTANCES:
        raise exception.InvalidRequest(
            f"instance_info.objects: expected a list of at most "
            f"{MAX_INSTANCES} instances")
    out = []
    for i, obj in enumerate(objects):
        data = primitives.unwrap(obj, "Instance", f"instance_info.{i}")
        uuid = data.get("uuid")
        if not isinstance(uuid, str):
            raise exception.InvalidRequest(
                f"instance_info.{i}.uuid: expected a uuid")
        out.append((canonical_uuid(uuid, f"instance_info.{i}.uuid"), data))
    return out


def uuids_listed(instance_uuids: Any, host_name: str) -> dict[str, str]:
    """instance uuid -> ``host_name``, for the uuid list of a
    ``sync_instance_info`` or ``delete_instance_info`` cast; uuids as
    :func:`instances_reported` gives them.

    :raises InvalidRequest: not a list of strings, or a uuid that is none.
    """
    if (not isinstance(instance_uuids, list)
            or len(instance_uuids) > MAX_INSTANCES
            or not all(isinstance(u, str) for u in instance_uuids)):
        raise exception.InvalidRequest(
            f"instance_uuids: expected a list of at most {MAX_INSTANCES} "
            f"uuids")
    return dict.fromkeys((canonical_uuid(u, f"instance_uuids.{i}")
                          for i, u in enumerate(instance_uuids)), host_name)


def seen(engine: sa.Engine, where: dict[str, str],
         resized: Collection[str] = frozenset(), retry: Retry = _once
         ) -> int:
    """The instances are on these hosts: confirm the claims held there
    (a move's destination included; a move with no confirm step is
    confirmed whole), and move claims (a move's destination) to the host
    the instance turned up on, unless that is the source of its move.

    A resize on one host whose destination expired during its disk copy
    gets its move back (``claims.moves.relocate``) when that host reports the
    instance: finish_resize's report is the only word that the resize went
    on (the host lists the instance throughout, so :func:`listed` does
    not; a resize that failed there would be held at both sizes for good).
    Only an instance in ``resized`` (reported resized: see
    :func:`instances_reported`) gets its move back, on one host or two:
    after a resize that failed, the instance turns up on that host for
    other reasons (its host restarted, a rebuild, a move forced there with
    no scheduler asked and no confirm to come) and holds its own claim
    there.
    ``retry`` runs each transaction (:data:`Retry`).
    :returns: how many claims were confirmed or relocated.
    """
    held = retry(allocations.holdings)(engine, list(where))
    resumed: dict[str, list[str]] = {}
    for uuid, h in held.items():
        if h.expired_host == where[uuid] == h.host and uuid in resized:
            resumed.setdefault(h.host, []).append(uuid)
    changed = sum(retry(moves.relocate)(engine, uuids, host,
                                        resumable=uuids)
                  for host, uuids in resumed.items())
    done = {u for uuids in resumed.values() for u in uuids}
    return changed + _seen(engine, where, {
        u: h for u, h in held.items() if u not in done}, resized, retry)


def listed(engine: sa.Engine, where: dict[str, str],
           retry: Retry = _once) -> int:
    """A host's own list of its instances (``sync_instance_info``: nova
    reads it by the instance's host in its database, so it names no stale
    copy of an instance; but it is read when sent, from a replica where
    nova has one, and served when a scheduler gets to it): as :func:`seen`,
    and a move whose destination was already confirmed but whose instance
    is listed on its source again was reverted (nova's same-cell resize
    revert sends no cast of its own). A source's list read before its
    instance left and served after its destination reported it is read
    the same way, a revert (or, after a live migration, the claim moved
    back): nothing in it tells the two apart (the strict xfails in
    tests/unit/nova/test_casts.py). ``retry`` runs each transaction
    (:data:`Retry`).
    :returns: how many claims changed.
    """
    held = retry(allocations.holdings)(engine, list(where))
    reverted = [u for u, h in held.items()
                if h.source_host == where[u] and h.host != where[u]
                and not h.provisional]
    # A list names no vm_state, so it brings no expired resize back
    # (see seen): finish_resize's own report does.
    return (_seen(engine, where, held, frozenset(), retry)
            + retry(moves.revert_move)(engine, reverted))


def _seen(engine: sa.Engine, where: dict[str, str],
          held: dict[str, Holding], resized: Collection[str],
          retry: Retry) -> int:
    on_claim = [u for u, h in held.items()
                if h.host == where[u] and not h.node_deleted]
    # A move with no confirm step ends on its destination: nothing else
    # will give its source back (see above).
    arrived = [u for u in on_claim if held[u].confirm_on_arrival]
    here = [u for u in on_claim
            if held[u].provisional and not held[u].confirm_on_arrival]
    elsewhere: dict[str, list[str]] = {}
    for uuid, h in held.items():
        # On the source of its move it says nothing (see above); anywhere
        # else but its claim's host, it runs there. A claim on a deleted
        # node of the same host (the node re-created under a new uuid) is
        # elsewhere too: it counts on no live node.
        if where[uuid] not in (h.host, h.source_host) or (
                h.node_deleted and where[uuid] == h.host):
            elsewhere.setdefault(where[uuid], []).append(uuid)
    # Each confirm is of the claim as read: on the host the instance was
    # seen on (a request may have moved the claim since).
    changed = 0
    for host, uuids in _by_host(here, where).items():
        changed += retry(lifecycle.confirm)(engine, uuids, host=host)
    changed += retry(moves.confirm_move)(engine, arrived)
    for host, uuids in elsewhere.items():
        changed += retry(moves.relocate)(engine, uuids, host,
                                         resumable=resized)
    return changed


def _by_host(uuids: list[str], where: dict[str, str]
             ) -> dict[str, list[str]]:
    """host -> those of ``uuids`` that ``where`` puts there."""
    out: dict[str, list[str]] = {}
    for uuid in uuids:
        out.setdefault(where[uuid], []).append(uuid)
    return out


def gone(engine: sa.Engine, where: dict[str, str], ttl: int = 0,
         retry: Retry = _once) -> int:
    """The instances left these hosts: release claims held there, confirm
    moves away from them, revert moves onto them.

    Leaving a move's destination is a revert (nova's cross-cell revert) or
    the instance deleted (the same cast): the source becomes the claim
    again, provisional for ``ttl`` seconds, so the source reporting the
    instance confirms it and a deleted instance's claim expires. Leaving
    a move's source is a confirm, or the instance deleted after an unseen
    revert (the same cast): the destination becomes the claim, provisional
    for ``ttl`` seconds in the same way. Leaving either side of a move with
    no confirm step (``confirm_on_arrival``) releases both: nova casts that
    only for an instance deleted or shelve-offloaded. ``retry`` runs each
    transaction (:data:`Retry`).
    :returns: how many claims changed.
    """
    held = retry(allocations.holdings)(engine, list(where))
    release, confirm_moves, revert_moves = [], [], []
    for uuid, h in held.items():
        if where[uuid] not in (h.host, h.source_host):
            continue
        if h.confirm_on_arrival:
            # A move with no confirm step is never confirmed or undone by
            # a cast (nova's live migration casts nothing at its end or its
            # rollback, an evacuation's source is down): gone from either
            # side, the instance was deleted or shelve-offloaded there.
            release.append(uuid)
        elif h.source_host == where[uuid]:
            # A resize on the same host is confirmed the same way (and
            # its revert is never seen: the host lists the instance
            # throughout).
            confirm_moves.append(uuid)
        else:
            (revert_moves if h.source_host is not None
             else release).append(uuid)
    # Each step acts only on claims still in the state it expects
    # (confirm_move / revert_move skip consumers no longer moving).
    return (retry(lifecycle.release)(engine, release)
            + retry(moves.confirm_move)(engine, confirm_moves, ttl=ttl)
            + retry(moves.revert_move)(engine, revert_moves, ttl=ttl))
