"""In-process timings on one fleet: refresh (nothing changed, 1% of nodes
changed, full read), the decision (refresh + filter + weigh + choose) and
a lone claim as a worker makes it, and claims made by 8 threads at once,
each in its own transaction or through group commit.

Only the stable entry points are used: ``SchedulerManager(conf, engine)``,
its ``.driver.host_manager.refresh(full=...)`` (see :func:`refresh`, the one
place to switch), ``.driver.decide(spec)``,
``RequestSpec.from_primitives``, ``scheduler.claims.consume.claim``,
``scheduler.claims.lifecycle.release`` and
``scheduler.claims.batch.ClaimBatcher``.
"""
from __future__ import annotations

import threading
import uuid as uuidlib

from scheduler.claims import consume
from scheduler.claims import lifecycle
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from scheduler.claims.batch import ClaimBatcher
from scheduler.rpc.endpoint import SchedulerManager
from scheduler.request.spec import RequestSpec

from benchmarks import cluster as cluster_mod
from benchmarks.timing import concurrently
from benchmarks.timing import Limits
from benchmarks.timing import repeat
from benchmarks.timing import Row

#: What the decide and end-to-end rows ask for (nova's m1.small).
FLAVOR = {"name": "m1.small", "memory_mb": 2048, "vcpus": 1, "root_gb": 20}
#: What the claim rows claim: small enough that claiming it over and over
#: on the same few nodes never matters for capacity.
CLAIM_FLAVOR = {"name": "bench.tiny", "memory_mb": 64, "vcpus": 1,
                "root_gb": 1}
#: At most this many nodes, picked by one decision, take the claim rows'
#: claims in turn (so a node gets few of them and never fills up).
CLAIM_NODES = 100
#: Threads of the concurrent claim rows (a worker's requests in flight).
CLAIM_CONCURRENCY = 8
#: The share of nodes the "1% changed" row changes before each refresh.
CHANGED_FRACTION = 0.01


class BenchmarkError(RuntimeError):
    """An entry point does not look the way the benchmarks expect."""


# ---------------------------------------------------------------------------
# THE ONE PLACE TO SWITCH between the full read and the incremental refresh.
#
# ``HostManager.refresh(full: bool = False)`` brings the in-memory view up to
# date (full=True re-reads everything). Until it exists, every refresh is
# ``host_states()``, i.e. a full read, and the report says so in a note.
# ---------------------------------------------------------------------------
def has_refresh(host_manager) -> bool:
    return callable(getattr(host_manager, "refresh", None))


def refresh(host_manager, full: bool = False) -> None:
    if has_refresh(host_manager):
        host_manager.refresh(full=full)
    else:
        host_manager.host_states()
# ---------------------------------------------------------------------------


def spec(flavor: dict, count: int = 1) -> RequestSpec:
    return RequestSpec.from_primitives({
        "flavor": dict(flavor),
        "instance_uuids": [str(uuidlib.uuid4()) for _ in range(count)]})


def measure(fleet: cluster_mod.Cluster, limits: Limits) -> list[Row]:
    """The refresh rows and the decide row for this fleet, in order."""
    manager = SchedulerManager(fleet.conf, fleet.engine)
    host_manager = manager.driver.host_manager
    hosts = fleet.hosts
    rows = []

    # First read, untimed: a refresh that has never run reads everything.
    refresh(host_manager, full=True)

    row = Row("refresh_nothing", hosts)
    rows.append(repeat(row, lambda: refresh(host_manager), limits))

    changer = cluster_mod.NodeChanger(fleet.engine, CHANGED_FRACTION)
    row = Row("refresh_changed", hosts)
    rows.append(repeat(row, lambda: refresh(host_manager), limits,
                       setup=changer))

    row = Row("refresh_full", hosts)
    rows.append(repeat(row, lambda: refresh(host_manager, full=True),
                       limits))

    one = spec(FLAVOR)
    row = Row("decide", hosts)
    rows.append(repeat(row, lambda: _decide(manager, one), limits))

    if not has_refresh(host_manager):
        for r in rows[:3]:
            r.notes.append("no HostManager.refresh yet: host_states(), "
                           "a full read")
    return rows


class _ClaimTargets:
    """Where the claim rows claim: the nodes one decision (untimed) chose
    for up to CLAIM_NODES instances, taken in turn, each against the
    generation it is known to have (the one read, plus one per claim made
    since: what the claim itself does). Every consumer claimed is released
    at the end, untimed."""

    def __init__(self, fleet: cluster_mod.Cluster, limits: Limits):
        self.fleet = fleet
        self.manager = SchedulerManager(fleet.conf, fleet.engine)
        self.count = min(CLAIM_NODES, limits.requests)
        self.ttl = fleet.conf.scheduler.unconfirmed_claim_ttl
        self.consumers: list[str] = []
        self.conflicts = 0
        self._lock = threading.Lock()
        self._next = 0
        self.pick()

    def pick(self) -> None:
        """Decide again (after a conflict: someone moved a node)."""
        targets = _claim_targets(_decide(self.manager,
                                         spec(CLAIM_FLAVOR, self.count)))
        with self._lock:
            self._targets = targets
            self._generation = {t[0]: t[2] for t in targets}

    def next_claim(self) -> Claim:
        """The next node's claim; its generation counted as taken."""
        consumer = str(uuidlib.uuid4())
        with self._lock:
            node_id, host, _ = self._targets[self._next % len(self._targets)]
            self._next += 1
            generation = self._generation[node_id]
            self._generation[node_id] = generation + 1
            self.consumers.append(consumer)
        return Claim(
            consumer_uuid=consumer, node_id=node_id, host=host,
            generation=generation, vcpus=CLAIM_FLAVOR["vcpus"],
            memory_mb=CLAIM_FLAVOR["memory_mb"],
            disk_gb=CLAIM_FLAVOR["root_gb"])

    def conflicted(self) -> None:
        with self._lock:
            self.conflicts += 1
        self.pick()

    def finish(self, row: Row) -> Row:
        for start in range(0, len(self.consumers), 500):
            lifecycle.release(self.fleet.engine,
                              self.consumers[start:start + 500])
        if self.conflicts:
            row.notes.append(f"{self.conflicts} generation conflicts "
                             f"(re-decided)")
        return row


def measure_claim(fleet: cluster_mod.Cluster, limits: Limits) -> Row:
    """A lone claim as a worker makes it (through its ClaimBatcher, with
    nothing to batch with): one instance per call, one call at a time, on
    the next node of :class:`_ClaimTargets`."""
    targets = _ClaimTargets(fleet, limits)
    row = Row(f"claim_{fleet.kind}", fleet.hosts)
    batcher = ClaimBatcher(fleet.engine,
                           fleet.conf.scheduler.claim_batch_size)

    def call() -> None:
        try:
            batcher.claim([targets.next_claim()], ttl=targets.ttl)
        except ClaimConflict:
            # Someone else moved a node (nothing should, in-process):
            # count it, read again, keep going.
            targets.conflicted()
            raise

    try:
        repeat(row, call, limits, expected=(ClaimConflict,))
    finally:
        batcher.close()
        targets.finish(row)
    return row


def measure_claims_concurrently(fleet: cluster_mod.Cluster, limits: Limits,
                                batched: bool) -> Row:
    """CLAIM_CONCURRENCY threads claiming one instance each, back to back,
    on the nodes of :class:`_ClaimTargets` (distinct nodes in flight): each
    claim its own transaction (``claims.consume.claim``), or with ``batched``
    through one :class:`scheduler.claims.batch.ClaimBatcher` of
    ``[scheduler] claim_batch_size`` (group commit), as a worker's request
    threads make them. ``req/s`` is claims committed per second."""
    targets = _ClaimTargets(fleet, limits)
    suffix = "_batched" if batched else ""
    row = Row(f"claim_c{CLAIM_CONCURRENCY}{suffix}_{fleet.kind}",
              fleet.hosts)
    if batched:
        batcher = ClaimBatcher(fleet.engine,
                               fleet.conf.scheduler.claim_batch_size)

        def make(claim: Claim) -> None:
            batcher.claim([claim], ttl=targets.ttl)
    else:
        def make(claim: Claim) -> None:
            consume.claim(fleet.engine, [claim], ttl=targets.ttl)

    def call() -> None:
        try:
            make(targets.next_claim())
        except ClaimConflict:
            targets.conflicted()
            raise

    try:
        concurrently(row, call, limits, CLAIM_CONCURRENCY,
                     expected=(ClaimConflict,))
    finally:
        targets.finish(row)
    return row


def _decide(manager: SchedulerManager, request: RequestSpec) -> list:
    result = manager.driver.decide(request)
    if not isinstance(result, list) or len(result) != request.num_instances:
        raise BenchmarkError(
            f"driver.decide() returned {type(result).__name__} "
            f"{result!r:.200}; expected a list of {request.num_instances} "
            "selections")
    return result


def _claim_targets(selections: list) -> list[tuple[int, str, int]]:
    """(node_id, host, generation) of each distinct node selected."""
    seen: dict[int, tuple[int, str, int]] = {}
    for s in selections:
        try:
            node = s.host
            target = (node.node_id, node.host, node.generation)
            s.consumer_uuid  # noqa: B018 - part of the expected shape
        except AttributeError as e:
            raise BenchmarkError(
                "driver.decide() returned selections of an unexpected "
                f"shape ({type(s).__name__}: {e}); the claim rows need "
                ".consumer_uuid and .host with .node_id, .host and "
                ".generation — adjust benchmarks/stages.py:_claim_targets"
            ) from e
        seen.setdefault(target[0], target)
    return list(seen.values())
