"""Prometheus metrics: every instrument of the service, and the exposition.

The server runs several worker processes; a scrape reaches the main process
(``/metrics``, :mod:`scheduler.service.http`). prometheus_client's multiprocess
mode carries the numbers across: :func:`use_multiprocess` (the main
process, before the workers fork) points every process at one fresh
private directory, each worker writes its values to memory-mapped files
named by its pid, and :func:`render` (the main process) adds them up:
counters and histograms summed over every worker that ever ran (a
restarted worker's counts are kept, so totals never go back), host-table
gauges one series per *live* worker (``pid`` label; a dead worker's are
dropped at the next scrape).

Without :func:`use_multiprocess` (tests, tools, a server without
``http_listen``) the same instruments count in process memory.

Instruments are built on first use in each process, never in the main
process of the server: built there, the main process would add a
``pid`` series of its own with an empty host table.

The recording functions are called on the request path: each costs a dict
lookup and a write, no allocation beyond prometheus_client's own.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import time
from typing import Iterator

import prometheus_client
from prometheus_client import multiprocess
from prometheus_client import values
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from scheduler import trace as trace_mod

ENV = "PROMETHEUS_MULTIPROC_DIR"

#: Seconds: sub-millisecond stages up to a request stuck behind the
#: database's lock timeout.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
           0.5, 1.0, 2.5, 5.0, 10.0, float("inf"))

_REFRESHED = "scheduler_host_table_refreshed_timestamp_seconds"

#: The ``kind`` label of ``scheduler_claim_conflicts_total``.
CONFLICT_KINDS = ("race", "disagreement", "duplicate")


class _Instruments:
    """The service's instruments, on one registry."""

    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = prometheus_client.Counter(
            "scheduler_requests",
            "RPC requests handled, by API (1.x 'scheduler' or 'nova'), "
            "method and outcome (ok, no_valid_host, invalid_request, "
            "service_unavailable, error). select_destinations' rows are "
            "the decisions.", ["api", "method", "outcome"], registry=r)
        self.request_seconds = prometheus_client.Histogram(
            "scheduler_request_duration_seconds",
            "Time to handle one RPC request, by API and method.",
            ["api", "method"], buckets=BUCKETS, registry=r)
        self.stage_seconds = prometheus_client.Histogram(
            "scheduler_stage_duration_seconds",
            "Time one request spent in a stage of a decision: parse "
            "(and validate), refresh (the host table from SQL; none "
            "when a refresh another queued request began after this one "
            "arrived served it), filter "
            "(targeting and filters), weigh, claim (the SQL transaction, "
            "retries included). Summed over a request's instances and "
            "re-plans.", ["stage"], buckets=BUCKETS, registry=r)
        self.refusals = prometheus_client.Counter(
            "scheduler_refusals",
            "Requests refused with NoValidHost, by the filter (or "
            "targeting step) that removed the last hosts; 'claim' when "
            "the claims were refused (every attempt lost a race, or a "
            "forced host had no room); 'request' when the request itself "
            "could not be honoured (nova's API refuses an unsupported "
            "request with NoValidHost).", ["filter"], registry=r)
        self.claim_conflicts = prometheus_client.Counter(
            "scheduler_claim_conflicts",
            "Claims refused by the database: race (another writer changed "
            "the node), disagreement (planner and claim disagreed on "
            "capacity: a bug), duplicate (the consumers were claimed "
            "concurrently).", ["kind"], registry=r)
        self.replans = prometheus_client.Counter(
            "scheduler_replans",
            "Plans made again after a refused claim.", registry=r)
        self.claim_batches = prometheus_client.Histogram(
            "scheduler_claim_batch_size",
            "Claims made together in one transaction (group commit), per "
            "transaction that held more than one.",
            buckets=(2, 3, 4, 6, 8, 12, 16, 32, 64, float("inf")),
            registry=r)
        self.drain_moves = prometheus_client.Counter(
            "scheduler_drain_moves",
            "Moves of drains: planned (dry run), applied (claimed, host "
            "disabled) and cancelled (released before they began).",
            ["action"], registry=r)
        self.nova_sync_seconds = prometheus_client.Histogram(
            "scheduler_nova_sync_seconds",
            "Seconds of one read of nova's databases into the mirror "
            "([nova] api_database_connection), every cell included.",
            buckets=BUCKETS, registry=r)
        self.nova_cell_failures = prometheus_client.Counter(
            "scheduler_nova_cell_read_failures",
            "Reads of a nova cell's database that failed (the cell's hosts "
            "were skipped until it answered again), by cell uuid.",
            ["cell"], registry=r)
        self.heat_boots = prometheus_client.Counter(
            "scheduler_heat_boots",
            "Nova's boots of Heat's servers (their hints name a stack): "
            "planned (the server's claim in its stack's plan taken over), "
            "refused (the stack does not fit), one_by_one (placed as any "
            "request: no plan, or the plan cannot be read or used).",
            ["outcome"], registry=r)
        self.db_transient_errors = prometheus_client.Counter(
            "scheduler_db_transient_errors",
            "Transient database errors (deadlock, lost or refused "
            "connection, lock timeout, serialization failure); each is "
            "retried while [scheduler] db_retries or, for a database that "
            "cannot be reached, db_outage_timeout allows.", registry=r)
        # The host-table gauges are made by the first host_table() call:
        # made here, a process that never holds a table (the main one,
        # should it record a database retry) would show an empty one.
        self.host_table_hosts: prometheus_client.Gauge | None = None
        self.host_table_refreshed: prometheus_client.Gauge | None = None
        # Children by label values: .labels() takes a lock and builds a
        # key on every call; this is a plain dict read.
        self._children: dict[tuple, object] = {}
        # What host_table() last wrote: each write to the metrics file
        # costs a few microseconds, and it runs on every request.
        self.table_size = -1
        self.refreshed_at = float("-inf")
        # Every kind shows from the start, at 0: a dashboard's rate() of
        # a series that appears only with the first conflict misses it.
        for kind in CONFLICT_KINDS:
            self.child(self.claim_conflicts, kind)

    def make_table_gauges(self) -> None:
        self.host_table_hosts = prometheus_client.Gauge(
            "scheduler_host_table_hosts",
            "Compute nodes in a worker's host table.",
            registry=self.registry, multiprocess_mode="liveall")
        self.host_table_refreshed = prometheus_client.Gauge(
            _REFRESHED,
            "Unix time a worker's host table was last brought up to date "
            "with SQL.", registry=self.registry, multiprocess_mode="liveall")

    def child(self, metric, *labels: str):
        key = (metric, labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found


_instruments: _Instruments | None = None
_multiprocess_dir: str | None = None
_owner: int | None = None      # the process that made the directory


def _get() -> _Instruments:
    global _instruments
    if _instruments is None:
        _instruments = _Instruments()
    return _instruments


# -- recording (workers) ---------------------------------------------------

def record_request(api: str, outcome: str, trace: trace_mod.Trace) -> None:
    """One RPC request ended with ``outcome``: count it, observe its
    duration and the stages it ran, and its refusal's filter."""
    m = _get()
    m.child(m.requests, api, trace.method, outcome).inc()
    m.child(m.request_seconds, api, trace.method).observe(
        time.perf_counter() - trace.started)
    for name, seconds in zip(trace_mod.STAGES, trace.seconds):
        if seconds is not None:
            m.child(m.stage_seconds, name).observe(seconds)
    if outcome == "no_valid_host":
        m.child(m.refusals, trace.refused_by or trace_mod.REQUEST_REFUSAL).inc()


def claim_conflict(kind: str) -> None:
    """A claim was refused: ``race``, ``disagreement`` or ``duplicate``."""
    m = _get()
    m.child(m.claim_conflicts, kind).inc()


def drain(action: str, moves: int) -> None:
    """A drain was ``planned``, ``applied`` or ``cancelled``: ``moves``
    moves."""
    m = _get()
    m.child(m.drain_moves, action).inc(moves)


def nova_sync(seconds: float, failed_cells: list[str]) -> None:
    """A read of nova's databases took ``seconds``; the cells (uuids) in
    ``failed_cells`` did not answer."""
    m = _get()
    m.nova_sync_seconds.observe(seconds)
    for cell in failed_cells:
        m.child(m.nova_cell_failures, cell).inc()


def heat_boot(outcome: str) -> None:
    """A boot of a Heat server was ``planned``, ``refused`` or placed
    ``one_by_one``."""
    m = _get()
    m.child(m.heat_boots, outcome).inc()


def replan() -> None:
    """A request plans again after a refused claim."""
    _get().replans.inc()


def claim_batch(size: int) -> None:
    """``size`` (> 1) requests' claims are made in one transaction."""
    _get().claim_batches.observe(size)


def db_transient_error() -> None:
    """A database transaction failed for a transient reason."""
    _get().db_transient_errors.inc()


#: Seconds between writes of the refresh time: the filter scheduler
#: refreshes on every request, and a second is all the age needs.
REFRESH_RESOLUTION = 1.0


def host_table(size: int) -> None:
    """This process's host table was brought up to date: ``size`` nodes
    (written when it changes; the time at most every
    REFRESH_RESOLUTION seconds)."""
    m = _get()
    if m.host_table_hosts is None:
        m.make_table_gauges()
    now = time.time()
    if size != m.table_size:
        m.table_size = size
        m.host_table_hosts.set(size)
    if now - m.refreshed_at >= REFRESH_RESOLUTION:
        m.refreshed_at = now
        m.host_table_refreshed.set(now)


# -- the process model (server main process) -------------------------------

def use_multiprocess() -> str:
    """Make every process forked from now on write its metrics to a fresh
    private directory (mode 0700), which :func:`render` reads; call in the
    server's main process before the workers fork.

    A new directory per start: nothing from an earlier run (whose counters
    would add to this one's) can be read.
    :returns: the directory; :func:`cleanup` removes it.
    """
    global _instruments, _multiprocess_dir, _owner
    # Instruments built before would keep counting in memory, unseen:
    # build them again, in the files.
    _instruments = None
    path = tempfile.mkdtemp(prefix="scheduler-metrics-")
    os.environ[ENV] = path
    # prometheus_client picks its value class when first imported, which
    # may have been before the variable was set.
    values.ValueClass = values.MultiProcessValue()
    _multiprocess_dir = path
    _owner = os.getpid()
    return path


def cleanup() -> None:
    """Remove the multiprocess directory (the main process, at exit; a
    worker that gets here leaves it to the main process)."""
    global _multiprocess_dir
    if _multiprocess_dir is not None and os.getpid() == _owner:
        shutil.rmtree(_multiprocess_dir, ignore_errors=True)
        _multiprocess_dir = None


_LIVE_FILE = re.compile(r"gauge_live\w+_(\d+)\.db$")


def _mark_dead_workers(path: str) -> None:
    """Drop the live gauges of workers that exited (a restarted or
    crashed worker), so their host table no longer shows."""
    for name in glob.glob(os.path.join(path, "gauge_live*_*.db")):
        match = _LIVE_FILE.search(name)
        if match is None:
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, path)
        except PermissionError:
            pass    # alive, someone else's: not ours to judge


class _RefreshAge(Collector):
    """``scheduler_host_table_refresh_age_seconds``: seconds since each
    worker's last refresh, computed at scrape time from the timestamp
    gauge (a worker cannot keep an age gauge current between requests)."""

    def __init__(self, source: Collector):
        self.source = source

    def collect(self) -> Iterator:
        now = time.time()
        age = GaugeMetricFamily(
            "scheduler_host_table_refresh_age_seconds",
            "Seconds since a worker's host table was last brought up to "
            "date with SQL.", labels=None)
        for family in self.source.collect():
            yield family
            if family.name != _REFRESHED:
                continue
            for sample in family.samples:
                age.add_sample(age.name, dict(sample.labels),
                               max(now - sample.value, 0.0))
        yield age


def render() -> tuple[bytes, str]:
    """The Prometheus text exposition of every worker's metrics (or this
    process's without multiprocess mode), and its content type."""
    if _multiprocess_dir is not None:
        _mark_dead_workers(_multiprocess_dir)
        source: Collector = multiprocess.MultiProcessCollector(
            None, _multiprocess_dir)
    else:
        source = _get().registry
    registry = prometheus_client.CollectorRegistry(auto_describe=False)
    registry.register(_RefreshAge(source))
    return (prometheus_client.generate_latest(registry),
            prometheus_client.CONTENT_TYPE_LATEST)
