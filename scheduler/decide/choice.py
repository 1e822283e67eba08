"""Which of the best-weighed hosts an instance gets: the choice that keeps
concurrent schedulers off each other's nodes.

Several scheduler processes plan on the same SQL state and claim with a
generation check, so two that pick the same node in the same moment make one
of them lose the claim and plan again. Nova's answer, a uniform random pick
among the ``host_subset_size`` best (``random``), makes that a 1-in-k event
per claim committed while a decision is in flight — measured in
``benchmarks/race.py``: still 4 % of placements at 4 processes with
k = 128. ``per_process`` gives each process its own order of the hosts
instead (a hash of the node id salted per process), so a process keeps
choosing its own favourite among the best until that host leaves them, and
it passes over, for :data:`AVOID_SECONDS`, every node it sees another writer
change (a generation it did not make itself) or loses a claim on: those are
another process's favourites. Processes so settle on different nodes without
knowing of each other. Both policies skip nodes this process is still
claiming on, or read before its own claim there committed (a second request
of the same process would lose to the first), unless nothing else is left.

The workers of one ``scheduler-server`` do know of each other, and the
servers on one topic find each other in ``services``
(:mod:`scheduler.service.peers`): each worker has its :class:`Share`, worker *i* of
*n* of server *s* of *m*. Under ``per_process`` a worker prefers, among the
best, the nodes its share owns (one part in *n* × *m*, by a hash of the
node id), so no two workers
share a favourite while their own part of the best has a free node —
without it they found each other's favourites only by losing races on them,
and on a fleet of equal nodes every placement moves a favourite (measured
in ``benchmarks/race.py``). The share comes before avoidance: a worker
whose own best hosts were all just written by others (a release) stays
among them rather than move into a sibling's. Salt and avoidance still
settle apart whoever the shares do not separate (a server not yet seen).

A :class:`Chooser` lives as long as its driver, one per worker process
(created after the fork, so every process draws its own salt).
"""
from __future__ import annotations

import dataclasses
import functools
import random
import threading
import time
from typing import Sequence

#: The policies of ``[filter_scheduler] host_subset_choice``.
POLICIES = ("random", "per_process")
#: How long a process leaves a node alone after seeing another writer on
#: it: hundreds of placements at the measured rates, long enough for that
#: writer's favourite to move on.
AVOID_SECONDS = 2.0
#: Expired entries are dropped once the avoid map holds this many.
_PRUNE_AT = 4096


@dataclasses.dataclass(frozen=True)
class Share:
    """A worker's place: worker ``index`` of its server's ``count``
    (cotyledon's worker id and ``[scheduler] workers``), on server
    ``server`` of the ``servers`` up on its topic (:func:`peers.place`).

    Servers split the nodes by a hash of the id modulo ``servers``, and
    each server's workers split its part again, so every node has exactly
    one owner whatever each server's number of workers. A hash, not the
    id itself: fleets are registered in patterns (zones, racks, sizes
    round robin), and with ids modulo 3 the best hosts of a request for
    one of three zones registered round robin would all fall to one
    server of three, the other two owning none of them and racing each
    other for them.
    """
    index: int = 0
    count: int = 1
    server: int = 0
    servers: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"worker {self.index} of {self.count}")
        if not 0 <= self.server < self.servers:
            raise ValueError(f"server {self.server} of {self.servers}")

    def owns(self, node_id: int) -> bool:
        """Whether this worker prefers ``node_id`` among equals."""
        h = _spread(node_id)
        # Two independent halves: which server, then which of its workers.
        return ((h >> 32) % self.servers == self.server
                and (h & _LOW) % self.count == self.index)


_MASK = 0xFFFFFFFFFFFFFFFF
_LOW = 0xFFFFFFFF


@functools.lru_cache(maxsize=1 << 17)
def _spread(node_id: int) -> int:
    """The same well-mixed 64-bit number for ``node_id`` in every process
    (splitmix64's finalizer: every bit depends on every bit of the id, so
    the server and the worker can take independent halves; Python's
    ``hash`` of an int is the int itself). Cached: the same best hosts
    come back request after request, and mixing costs about 1.5 us where
    a cache hit costs a tenth of that."""
    z = (node_id + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


#: A process that is the only worker it knows of.
ALONE = Share()

#: ``host_subset_size`` when it is not set and this process is not alone
#: on its topic: enough best hosts that each of up to six shares owns
#: several of them (a share owns none of 64 in about 1 request in 100,000
#: at six), measured in ``benchmarks/race.py`` (no claim lost between the
#: workers of one server in 36 cells at 1-6 workers, 20-90 % fill).
SHARED_SUBSET = 64


def subset_size(configured: int | None, share: Share) -> int:
    """How many best hosts a request chooses among (nova's
    ``host_subset_size``) for a worker of ``share``.

    ``configured`` wins when set. Unset (the default), a process alone on
    its topic takes the best host, as nova's default does: it cannot race
    itself (its planning is serialized and sees its own claims). A process
    with siblings or peers takes one of the :data:`SHARED_SUBSET` best, so
    that each prefers best hosts of its own share: with one best host every
    process wanted the same node and all but one lost the claim (one server
    with its default 2 workers lost 1,041 claims in about 11,000 requests).
    """
    if configured is not None:
        return configured
    return 1 if share.count * share.servers == 1 else SHARED_SUBSET


def slot_shares(weights: Sequence[float], slots: int
                ) -> list[float] | None:
    """Each candidate's chance, relative to the others, under nova's pick:
    ``random.choice`` among the first ``slots`` hosts of the sorted list.

    ``weights`` are the candidates' weights, best first: the ``slots`` best
    and then hosts of exactly the last one's weight. A host better than
    that weight has its own slot (1.0); the slots left are shared evenly by
    every host of that weight, since which of those equals nova's list
    happened to put first is arbitrary. So the better hosts keep nova's
    1 in ``slots`` however many hosts tie behind them. None when there are
    no more candidates than slots (every one has a slot of its own).
    """
    n = len(weights)
    if n <= slots:
        return None
    last = weights[slots - 1]
    better = sum(1 for w in weights if w > last)
    share = (slots - better) / (n - better)
    return [1.0] * better + [share] * (n - better)


class Chooser:
    """One process's choice among the best hosts; safe across threads."""

    def __init__(self, policy: str = "random", seed: int | None = None,
                 share: Share = ALONE):
        if policy not in POLICIES:
            raise ValueError(f"host_subset_choice: expected one of "
                             f"{', '.join(POLICIES)}, got {policy!r}")
        self.policy = policy
        self.share = share
        self._rng = random.Random(seed)
        self._salt = self._rng.getrandbits(64)
        self._lock = threading.Lock()
        self._claiming: dict[int, int] = {}    # node id -> claims in flight
        self._avoid: dict[int, float] = {}     # node id -> until (monotonic)
        #: node id -> the highest generation this process saw (per_process)
        #: or made there: a lower one in a later table is a stale read, a
        #: higher one someone else's write.
        self._seen: dict[int, int] = {}

    def pick(self, candidates: Sequence[tuple[int, int]],
             weights: Sequence[float] | None = None, slots: int = 1) -> int:
        """The index into ``candidates`` — ``(node id, generation as read)``
        of the best hosts, best first — of the one to place on. Nodes this
        process is claiming on are passed over while others remain;
        (random) the others are drawn with nova's chances for the
        candidates' ``weights`` among ``slots`` (:func:`slot_shares`;
        without weights, evenly); (per_process) this worker's share comes
        first, and within it the nodes it did not see another writer on
        lately."""
        now = time.monotonic()
        with self._lock:
            # A generation below one this process made is a read from
            # before its own claim committed: that claim would lose.
            busy = [n in self._claiming or generation < self._seen.get(n, 0)
                    for n, generation in candidates]
            if self.policy == "per_process":
                for n, generation in candidates:
                    if generation > self._seen.get(n, generation):
                        self._avoid[n] = now + AVOID_SECONDS
                    self._seen[n] = max(generation, self._seen.get(n, 0))
                if len(self._avoid) > _PRUNE_AT:
                    self._avoid = {n: u for n, u in self._avoid.items()
                                   if u > now}
            avoided = [self._avoid.get(n, 0.0) > now for n, _ in candidates]
        usable = [i for i in range(len(candidates)) if not busy[i]] \
            or list(range(len(candidates)))
        if self.policy == "random":
            shares = (None if weights is None
                      else slot_shares(list(weights), slots))
            if shares is None:
                return self._rng.choice(usable)
            return self._rng.choices(
                usable, weights=[shares[i] for i in usable])[0]
        # The share before avoidance: a sibling worker writes only its own
        # share, so a node of ours another writer touched (a server not yet
        # seen, a release) is a better bet than the sibling's next favourite.
        # Each preference narrows the usable ones if any pass it (what a
        # min over (not ours, avoided, hash) picks, without a key tuple
        # per candidate); the salted hash orders what is left.
        owns = self.share.owns
        usable = [i for i in usable if owns(candidates[i][0])] or usable
        usable = [i for i in usable if not avoided[i]] or usable
        salt = self._salt
        return min(usable, key=lambda i: hash((salt, candidates[i][0])))

    def claiming(self, planned: Sequence[tuple[int, int]]) -> None:
        """This process is about to claim on these nodes, ``(node id,
        generation the claim will leave)``."""
        with self._lock:
            for n, generation in planned:
                self._claiming[n] = self._claiming.get(n, 0) + 1
                self._seen[n] = max(generation, self._seen.get(n, 0))

    def claimed(self, node_ids: Sequence[int], won: bool = True) -> None:
        """Those claims are over (won or lost). A claim that wrote nothing
        left no generation of this process's on its nodes: forget the one
        :meth:`claiming` expected, or those nodes read as stale for good."""
        with self._lock:
            for n in node_ids:
                left = self._claiming.get(n, 0) - 1
                if left > 0:
                    self._claiming[n] = left
                else:
                    self._claiming.pop(n, None)
                    if not won:
                        self._seen.pop(n, None)

    def lost(self, node_id: int | None) -> None:
        """Another writer won this node: leave it alone for a while
        (per_process only: under ``random`` nobody keeps a favourite, so
        there is nothing to learn from where a race was lost)."""
        if node_id is None or self.policy != "per_process":
            return
        with self._lock:
            self._avoid[node_id] = time.monotonic() + AVOID_SECONDS
