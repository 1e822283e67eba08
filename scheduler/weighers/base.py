"""The weigher plugin shape, and weighing: normalize, multiply, sum, sort.

A weigher returns a raw number per host (higher is better before its
multiplier). Raw values are normalized to [0, 1] over the hosts of *this*
call (never remembered across requests, unlike nova before Victoria), then
multiplied by the weigher's configured multiplier, so each weigher adds at
most |multiplier| to a host's weight.

Weighers that can, score whole columns at once (``weigh_columns``); the best
hosts are then found with a partial sort, not by sorting every host. Ties
keep the candidates' order, as a stable sort would.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Iterable, Sequence

import numpy as np
from oslo_config import cfg

from scheduler.hosts.aggregates import min_value
from scheduler.hosts.state import Aggregate
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.request.spec import RequestSpec


class BaseWeigher:
    """One raw score per host; subclasses set ``multiplier_option`` (else
    their multiplier is 1.0).

    As in nova, a host in an aggregate with metadata named like the option
    (``ram_weight_multiplier=-1.0``; :attr:`aggregate_key`) is weighed with
    that multiplier instead, the smallest one if its aggregates disagree,
    the option's if one is not a number (logged once).
    """

    #: Option in [filter_scheduler] holding this weigher's multiplier.
    multiplier_option: ClassVar[str]
    #: -1 for a weigher whose option is a penalty (nova negates it).
    multiplier_sign: ClassVar[float] = 1.0
    #: Fixed lower/upper bound for normalization; None = min/max of the call.
    minval: ClassVar[float | None] = None
    maxval: ClassVar[float | None] = None

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def configured_multiplier(self) -> float:
        """The option's value (before :attr:`multiplier_sign`); 1.0 for a
        plugin that names no option (nova's BaseWeigher.weight_multiplier),
        so a weigher ported from nova without one still weighs."""
        option = getattr(self, "multiplier_option", None)
        if option is None:
            return 1.0
        return self.conf.filter_scheduler[option]

    @property
    def multiplier(self) -> float:
        return self.multiplier_sign * self.configured_multiplier

    @property
    def aggregate_key(self) -> str | None:
        """Aggregate metadata key overriding the multiplier per host; None
        for a plugin that has no multiplier option."""
        return getattr(self, "multiplier_option", None)

    def multipliers(self, view: HostView, idx: np.ndarray
                    ) -> float | np.ndarray:
        """The multiplier of each host at ``idx``: one number when no
        aggregate of the table overrides it (the usual case, no per-host
        work), else one per host, decided once per distinct aggregate
        membership."""
        key = self.aggregate_key
        if key is None or key not in view.aggregate_keys:
            return self.multiplier
        per_membership = np.array([
            self.multiplier_sign * self.host_multiplier(aggregates)
            for aggregates in view.memberships])
        return per_membership[view.take("membership", idx)]

    def host_multiplier(self, aggregates: Iterable[Aggregate]) -> float:
        """nova's ``weight_multiplier(host_state)`` for a host in
        ``aggregates``: the smallest of their :attr:`aggregate_key` values,
        else the option's (before :attr:`multiplier_sign`)."""
        key = self.aggregate_key
        return min_value({agg.metadata[key] for agg in aggregates
                          if key in agg.metadata},
                         self.configured_multiplier, float, key)

    def applies(self, spec: RequestSpec) -> bool:
        """False when this weigher has nothing to say about ``spec`` (it
        would give every host the same raw value): it is then skipped, like
        a multiplier of 0, which changes no weight and leaves it out of the
        weights shown."""
        return True

    def weigh(self, host: HostState, spec: RequestSpec) -> float:
        raise NotImplementedError

    def weigh_columns(self, view: HostView, idx: np.ndarray,
                      spec: RequestSpec) -> np.ndarray | None:
        """Raw values of the hosts at ``idx`` at once, or None when the
        weigher has no column-wise form. Must agree with ``weigh``."""
        return None


@dataclasses.dataclass
class WeighedHost:
    host: HostState
    weight: float = 0.0
    #: weigher name -> normalized value (before the multiplier)
    weights: dict[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Weighing:
    """The weights of the hosts at ``idx`` (same order)."""
    idx: np.ndarray
    total: np.ndarray
    #: weigher name -> normalized values (before the multiplier), when
    #: weighed with ``parts``
    parts: dict[str, np.ndarray]

    def best(self, k: int, ties: int = 0) -> np.ndarray:
        """Indexes into ``idx`` of the ``k`` best hosts, best first; ties in
        input order. With ``ties``, up to that many more hosts of exactly
        the k-th's weight follow them: equals of the last, which a choice
        among the best may take as well. Partial sort: cost grows with k,
        not with all hosts, nor with how many are tied."""
        n = len(self.idx)
        if n == 0:
            return np.arange(0)
        k = min(k, n)
        if k == 1:
            if not ties:
                # argmax returns the first of equal maxima: input order.
                return np.array([int(np.argmax(self.total))])
            # The best and its equals, in input order: what the partial
            # sort below finds when k is 1, in two passes instead of five.
            return _first_true(self.total == self.total.max(), 1 + ties)
        order_key = -self.total
        kth = _kth_smallest(order_key, k)
        # Fewer than k hosts are strictly better than the k-th; the rest
        # of the k, and the ties after them, are the first hosts of
        # exactly its weight (flatnonzero keeps input order).
        better = np.flatnonzero(order_key < kth)
        better = better[np.lexsort((better, order_key[better]))]
        tied = _first_true(order_key == kth, k - len(better) + ties)
        return np.concatenate((better, tied))


#: Positions scanned at a time for the first true ones of a mask.
_CHUNK = 4096


def _first_true(mask: np.ndarray, count: int) -> np.ndarray:
    """The positions of the first ``count`` true values of ``mask``.

    By chunks: a fleet of identical hosts ties by the thousand, and listing
    every tied position to keep a few took 130 µs at 100,000 hosts.
    """
    found: list[np.ndarray] = []
    for start in range(0, len(mask), _CHUNK):
        chunk = np.flatnonzero(mask[start:start + _CHUNK])
        if len(chunk):
            found.append(chunk[:count] + start)
            count -= len(found[-1])
            if count <= 0:
                break
    return np.concatenate(found) if found else np.arange(0)


def _kth_smallest(values: np.ndarray, k: int) -> float:
    """The ``k``-th smallest of ``values`` (1-based). For the first, a
    minimum: one pass, where a partition copies the array and selects
    (about 2 against 70 µs at 10,000 hosts), and a subset of 1 is the
    default."""
    if k == 1:
        return values.min()
    return np.partition(values, k - 1)[k - 1]


def normalize(values: Sequence[float] | np.ndarray,
              minval: float | None = None,
              maxval: float | None = None,
              out: np.ndarray | None = None) -> np.ndarray:
    """Map ``values`` to [0, 1]; all-equal values (or equal bounds) map to 0.
    Declared bounds clamp the values instead of being widened by them.

    ``values`` is never changed (a weigher may hand over a table's own
    column). The result is written into ``out`` when given (same length),
    else into a new array.
    """
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return values
    lower = values.min() if minval is None else minval
    upper = values.max() if maxval is None else maxval
    if upper <= lower:
        return np.zeros(len(values))
    # Only a declared bound can cut a value (the other is the values' own
    # extreme), and only if a value lies beyond it: a pass to look costs a
    # fifth of one that clamps. Each pass over 100,000 hosts costs, so the
    # first that writes makes the result, and the rest work on it in place.
    result, written = values, False
    if minval is not None and values.min() < lower:
        result, written = np.maximum(result, lower, out=out), True
    if maxval is not None and values.max() > upper:
        result = np.minimum(result, upper, out=result if written else out)
        written = True
    if lower:
        result = np.subtract(result, lower, out=result if written else out)
        written = True
    return np.divide(result, upper - lower, out=result if written else out)


def weigh(weighers: Sequence[BaseWeigher], view: HostView, idx: np.ndarray,
          spec: RequestSpec, parts: bool = False) -> Weighing:
    """Weigh the hosts at ``idx``: every weigher's raw values normalized
    over them, times its multiplier, summed. Fewer than two hosts are not
    weighed (all 0), as in nova.

    :param parts: keep each weigher's normalized values
        (``Weighing.parts``, what a ranking shows); without them the
        weighers after the first are normalized into one scratch array,
        which spares an array per weigher (the cost of a pass at 100,000
        hosts).
    """
    kept: dict[str, np.ndarray] = {}
    if len(idx) < 2:
        return Weighing(idx, np.zeros(len(idx)), kept)
    # The first weigher's values become the total (no zeros to add them
    # to); the others are normalized into one scratch array, made then.
    total = scratch = None
    for weigher in weighers:
        multiplier = weigher.multipliers(view, idx)
        # A plain number in the usual case: np.any would wrap it in an
        # array first, several µs per weigher and request.
        if not (multiplier.any() if isinstance(multiplier, np.ndarray)
                else multiplier) or not weigher.applies(spec):
            continue
        raw = weigher.weigh_columns(view, idx, spec)
        if raw is None:
            raw = [weigher.weigh(view.state(i), spec) for i in idx]
        value = normalize(raw, weigher.minval, weigher.maxval, out=scratch)
        if parts:
            kept[weigher.name] = value
            value = value * multiplier
        elif isinstance(multiplier, np.ndarray) or multiplier != 1:
            value *= multiplier     # 1 × value is value: no pass
        if total is None:
            total = value           # new: never a weigher's own column
            if not parts:
                scratch = np.empty(len(idx))
        else:
            total += value
    return Weighing(idx, np.zeros(len(idx)) if total is None else total,
                    kept)


def weigh_hosts(weighers: Sequence[BaseWeigher], hosts: Sequence[HostState],
                spec: RequestSpec) -> list[WeighedHost]:
    """Weigh a plain list of hosts and return all of them best first."""
    view = HostView(HostTable(hosts))
    weighing = weigh(weighers, view, view.all_positions(), spec,
                     parts=True)
    return [WeighedHost(view.state(i), float(weighing.total[j]),
                        {name: float(v[j])
                         for name, v in weighing.parts.items()})
            for j in weighing.best(len(hosts))
            for i in [weighing.idx[j]]]
