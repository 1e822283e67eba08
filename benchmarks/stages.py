"""In-process timings on one fleet: refresh (nothing changed, 1% of nodes
changed, full read), the decision (refresh + filter + weigh + choose) and
the claim transaction on its own.

Only the stable entry points are used: ``SchedulerManager(conf, engine)``,
its ``.driver.host_manager.refresh(full=...)`` (see :func:`refresh`, the one
place to switch), ``.driver.decide(spec)``,
``RequestSpec.from_primitives`` and ``scheduler.claims.claim``/``release``.
"""
from __future__ import annotations

import uuid as uuidlib

from scheduler import claims
from scheduler.manager import SchedulerManager
from scheduler.request_spec import RequestSpec

from benchmarks import cluster as cluster_mod
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


def measure_claim(fleet: cluster_mod.Cluster, limits: Limits) -> Row:
    """The claim transaction alone: one decision (untimed) places up to
    CLAIM_NODES instances; then each timed call claims one instance on the
    next node that decision chose, against the generation that node is
    known to have (the one read, plus one per claim made since — what the
    claim itself does). Everything claimed is released afterwards,
    untimed."""
    manager = SchedulerManager(fleet.conf, fleet.engine)
    ttl = fleet.conf.scheduler.unconfirmed_claim_ttl
    row = Row(f"claim_{fleet.kind}", fleet.hosts)
    consumers: list[str] = []
    state = {"targets": [], "generation": {}}

    def pick() -> None:
        count = min(CLAIM_NODES, limits.requests)
        targets = _claim_targets(_decide(manager, spec(CLAIM_FLAVOR, count)))
        state["targets"] = targets
        state["generation"] = {t[0]: t[2] for t in targets}

    def claim(i: int) -> None:
        targets = state["targets"]
        node_id, host, _ = targets[i % len(targets)]
        consumer = str(uuidlib.uuid4())
        consumers.append(consumer)
        claims.claim(fleet.engine, [claims.Claim(
            consumer_uuid=consumer, node_id=node_id, host=host,
            generation=state["generation"][node_id],
            vcpus=CLAIM_FLAVOR["vcpus"], memory_mb=CLAIM_FLAVOR["memory_mb"],
            disk_gb=CLAIM_FLAVOR["root_gb"])], ttl=ttl)
        state["generation"][node_id] += 1

    conflicts = 0
    counter = iter(range(1 << 62))

    def call() -> None:
        nonlocal conflicts
        try:
            claim(next(counter))
        except claims.ClaimConflict:
            # Someone else moved a node (nothing should, in-process):
            # count it, read again, keep going.
            conflicts += 1
            pick()
            raise

    pick()
    try:
        repeat(row, call, limits, expected=(claims.ClaimConflict,))
    finally:
        for start in range(0, len(consumers), 500):
            claims.release(fleet.engine, consumers[start:start + 500])
    if conflicts:
        row.notes.append(f"{conflicts} generation conflicts (re-decided)")
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
