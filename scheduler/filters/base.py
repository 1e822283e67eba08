"""The filter plugin shape, and the loop that runs filters in order.

A filter is a small class with a ``name``, a stable human-readable
``reason`` ("insufficient RAM") and one predicate, ``host_passes``. That
shape is what lets every refusal explain itself: the loop counts what each
filter removed and the reason comes with it, so a NoValidHost reads like
``RamFilter removed 620 (insufficient RAM: need 65536 MB)`` by construction.

To add a filter: subclass BaseFilter in its own module, register it in the
``scheduler.filters`` entry-point namespace, and name it in
``[filter_scheduler] enabled_filters``.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Sequence

import numpy as np
from oslo_config import cfg

from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.request.spec import RequestSpec

SAMPLE_SIZE = 5


class BaseFilter:
    """One host predicate. Subclasses set ``reason`` and ``host_passes``."""

    #: Stable explanation of why a host fails this filter.
    reason: ClassVar[str] = "rejected"
    #: True if the answer cannot change between instances of one request
    #: (nova's semantics), so it runs for the first instance only.
    run_filter_once_per_request: ClassVar[bool] = False
    #: nova's RUN_ON_REBUILD: whether nova's rebuild check runs it (only
    #: the image filters; usage and policy filters pass the current host).
    run_on_rebuild: ClassVar[bool] = False
    #: The capacities this filter enforces (the keys of :meth:`limits`):
    #: a pipeline with no filter for one runs the stock filter for it
    #: (:func:`scheduler.decide.filter.with_capacity`).
    enforces: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        raise NotImplementedError

    def filter_all(self, hosts: Sequence[HostState],
                   spec: RequestSpec) -> list[HostState]:
        """The hosts that pass, in order. Override to filter a whole list at
        once (faster); the result must equal calling host_passes on each."""
        return [h for h in hosts if self.host_passes(h, spec)]

    def filter_columns(self, view: HostView, idx: np.ndarray,
                       spec: RequestSpec) -> np.ndarray | None:
        """Column-wise filtering: the positions in ``idx`` that pass, in
        order, or None when the filter has no column-wise form (then
        ``filter_all`` runs on HostStates). Must agree with
        ``host_passes``; built-in filters implement it for speed."""
        return None

    def explain(self, spec: RequestSpec) -> str:
        """The reason, with request details worth showing (e.g. the size
        needed). Must not depend on the host."""
        return self.reason

    def limits(self, host: HostState) -> dict[str, float]:
        """Limits this filter enforced on ``host``, returned to the caller
        so the compute side can enforce the same (nova's ``limits``)."""
        return {}

    def room(self, view: HostView, idx: np.ndarray,
             spec: RequestSpec) -> np.ndarray | None:
        """How many more instances like ``spec`` each host at ``idx`` (all
        passing this filter) takes by this filter's rule, for the
        ``capacity`` question; None when its verdict does not change as
        instances are planned onto a host (a host that passes takes any
        number). A filter judging usage, counts or members says it here,
        or ``capacity`` overcounts."""
        return None


def passing(idx: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The positions ``idx`` where ``mask`` (aligned with it) holds, for a
    ``filter_columns``: ``idx`` itself when every host passes, the usual
    case, which skips gathering a copy of every position."""
    return idx if mask.all() else idx[mask]


@dataclasses.dataclass(frozen=True)
class FilterStep:
    """What one filter did to one candidate list."""
    name: str
    hosts_in: int
    hosts_out: int
    reason: str
    sample: tuple[str, ...]

    @property
    def removed(self) -> int:
        return self.hosts_in - self.hosts_out

    def to_primitive(self) -> dict:
        return {"name": self.name, "in": self.hosts_in, "out": self.hosts_out,
                "reason": self.reason, "sample": list(self.sample)}


def narrow(view: HostView, idx: np.ndarray, keep: np.ndarray, name: str,
           reason: str, steps: list[FilterStep]) -> np.ndarray:
    """Keep the hosts at positions ``idx`` where ``keep`` (a mask aligned
    with ``idx``) is true, and append a FilterStep to ``steps`` when that
    removed any.

    For narrowing that is not a filter plugin (the request's targeting,
    a stack's relations), so a refusal explains it like a filter's.
    """
    if keep.all():
        return idx
    dropped = tuple(_name(view.host_names[i], view.node_names[i])
                    for i in idx[~keep][:SAMPLE_SIZE])
    steps.append(FilterStep(name, len(idx), int(keep.sum()), reason,
                            dropped))
    return idx[keep]


def run_filters(filters: Sequence[BaseFilter], view: HostView,
                idx: np.ndarray, spec: RequestSpec, index: int = 0
                ) -> tuple[np.ndarray, list[FilterStep]]:
    """Run ``filters`` in order over the hosts at positions ``idx`` of
    ``view``; stop when none is left.

    ``index`` is the instance's position in a multi-instance request; filters
    marked once-per-request are skipped after the first.
    :returns: the positions that survive (order kept) and one FilterStep
        per filter that ran.
    """
    steps = []
    rebuild = spec.is_rebuild     # a property: once, not per filter
    for f in filters:
        if index > 0 and f.run_filter_once_per_request:
            continue
        if rebuild and not f.run_on_rebuild:
            continue
        passed = f.filter_columns(view, idx, spec)
        if passed is None:
            passed = _filter_states(f, view, idx, spec)
        if len(passed) == len(idx):
            # Nothing removed (passed keeps idx's order): idx itself, not
            # the filter's copy of it. Until a host is removed that is the
            # table's all-positions array, and every later filter and
            # weigher reads whole columns instead of gathering copies
            # (HostTable.take).
            passed = idx
        sample: tuple[str, ...] = ()
        if len(passed) < len(idx):
            # A mask over the table, not np.isin (which sorts): this runs
            # for every filter that removed anything, per instance.
            kept = np.zeros(len(view.table), np.bool_)
            kept[passed] = True
            removed = idx[~kept[idx]]
            sample = tuple(_label(view.state(i))
                           for i in removed[:SAMPLE_SIZE])
        steps.append(FilterStep(f.name, len(idx), len(passed),
                                f.explain(spec), sample))
        idx = passed
        if not len(idx):
            break
    return idx, steps


def _filter_states(f: BaseFilter, view: HostView, idx: np.ndarray,
                   spec: RequestSpec) -> np.ndarray:
    """A filter without a column-wise form, on HostState objects."""
    states = [view.state(i) for i in idx]
    kept = f.filter_all(states, spec)
    if len(kept) == len(states):
        return idx
    kept_ids = {id(s) for s in kept}
    return idx[np.fromiter((id(s) in kept_ids for s in states), np.bool_,
                           len(states))]


def _label(state: HostState) -> str:
    return _name(state.host, state.nodename)


def _name(host: str, nodename: str) -> str:
    """How a sample names a node: its host, and the node if it differs."""
    return host if host == nodename else f"{host}:{nodename}"


def filter_hosts(filters: Sequence[BaseFilter], hosts: Sequence[HostState],
                 spec: RequestSpec, index: int = 0
                 ) -> tuple[list[HostState], list[FilterStep]]:
    """:func:`run_filters` over a plain list of host states."""
    view = HostView(HostTable(hosts))
    idx, steps = run_filters(filters, view, view.all_positions(), spec,
                             index)
    return [view.state(i) for i in idx], steps


def emptied_by(steps: Sequence[FilterStep]) -> str | None:
    """The name of the step that removed the last hosts, if one did (the
    refusal's label in the metrics)."""
    if steps and steps[-1].hosts_out == 0 and steps[-1].hosts_in > 0:
        return steps[-1].name
    return None


def explain(steps: Sequence[FilterStep], total: int,
            hosts: str = "hosts") -> str:
    """``0/1000 hosts passed. RamFilter removed 620 (insufficient RAM), ...``
    listing only the filters that removed something, in the order run;
    ``hosts`` names the hosts counted (``remaining hosts``)."""
    passed = steps[-1].hosts_out if steps else total
    parts = [f"{s.name} removed {s.removed} ({s.reason})"
             for s in steps if s.removed]
    text = f"{passed}/{total} {hosts} passed"
    if not total:
        # Nothing was filtered: say why there was nothing to filter.
        return text + (" (no compute node with a compute service is "
                       "registered)")
    return text + (". " + ", ".join(parts) if parts else "")
