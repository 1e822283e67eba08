"""Group commit: the claims of requests that queue up in one process, made in
one transaction.

Every claim is a transaction, and a transaction's commit is what costs when
the database keeps its promise (an fsync of SQLite's WAL or PostgreSQL's
log) and what serializes writers on SQLite. When requests of one worker
arrive together, their claims queue for that commit one behind the other.
:class:`ClaimBatcher` lets the first of them lead: it takes every claim
queued so far (up to ``[scheduler] claim_batch_size``), makes them in one
transaction, commits once and hands each request its own outcome. Claims
that arrive meanwhile queue for the next batch, led by the first of them.
Alone, a claim is its own transaction as before; nothing waits for
company. On PostgreSQL a lone claim of one instance is one statement
instead (:func:`scheduler.claims.consume.claim_alone`): one round trip,
not four.

Each claim keeps its own outcome and raises to its request alone, exactly
as :func:`scheduler.claims.consume.claim` would; the others commit. A
claim that loses a race wrote nothing (its node's guarded UPDATE matched
no row), so the batch goes on without a SAVEPOINT per claim (two
statements each). One that finds its consumer already placed has written
its node's UPDATE: the transaction is rolled back and the others are made
again without it, a rare case (a re-sent request). If the transaction
itself fails (a lost connection, a deadlock, the commit), nothing of the
batch was written and every request that had no outcome of its own gets
that error, to retry as it would have.

Only plain claims share a transaction: one node, no server group, nothing
replaced or moved. A batch first locks all its nodes in id order
(:func:`scheduler.claims.consume.lock_nodes`: every writer takes its nodes
before the change counter, so nobody deadlocks), then makes the claims in node
order, keeping arrival order on the same node (a later request planned on
the earlier one's claim). Any other claim is made alone, as before.
"""
from __future__ import annotations

import copy
import dataclasses
import threading
from typing import Iterable

import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.claims.groups import GroupRule
from scheduler.claims.refusals import ConsumerExists
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from scheduler import metrics
from scheduler.hosts.capacity import Ratios
from scheduler.db import kept


@dataclasses.dataclass
class _Pending:
    """One request's claim, waiting for its batch."""
    claims: list[Claim]
    ttl: int
    default_ratios: Ratios
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    #: Set with ``done`` when this request is to lead the next batch.
    leads: bool = False
    #: Its own outcome, or the batch's failure if it had none.
    error: BaseException | None = None


class ClaimBatcher:
    """:func:`scheduler.claims.consume.claim` for concurrent requests of one
    process, committed together when they queue up.

    :param max_batch: most claims per transaction; 1 makes every claim its
        own transaction.
    """

    def __init__(self, engine: sa.Engine, max_batch: int):
        self.engine = engine
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._leading = False
        # The leader's connection: one leader at a time uses it, so every
        # queued claim's transaction skips the pool (made on first use, in
        # the worker process).
        self._conn = kept.KeptConnection(engine, autocommit=False)
        # And, where a lone claim is one statement, a connection in
        # autocommit for those (made on first use too).
        self._alone = kept.KeptConnection(engine, autocommit=True)

    def close(self) -> None:
        """Give back the connection batches keep (at shutdown, with no claim
        in flight)."""
        self._conn.close()
        self._alone.close()

    def claim(self, to_claim: list[Claim], *,
              group: GroupRule | None = None,
              replace: Iterable[str] = (), move: Iterable[str] = (),
              ttl: int = 0, default_ratios: Ratios = Ratios(),
              moving_from: dict | None = None,
              confirm_on_arrival: bool = False) -> None:
        """Record ``to_claim`` all together or not at all; the contract and
        errors of :func:`scheduler.claims.consume.claim`, whose transaction
        it may share with other requests' plain claims."""
        replace, move = list(replace), list(move)
        if (self.max_batch <= 1 or group is not None or replace or move
                or len({c.node_id for c in to_claim}) != 1):
            consume.claim(self.engine, to_claim, group=group, replace=replace,
                          move=move, ttl=ttl, default_ratios=default_ratios,
                          moving_from=moving_from,
                          confirm_on_arrival=confirm_on_arrival)
            return
        me = _Pending(to_claim, ttl, default_ratios)
        with self._lock:
            self._queue.append(me)
            lead = not self._leading
            self._leading = True
        if not lead:
            me.done.wait()
            lead = me.leads
        if lead:
            self._lead()
        if me.error is not None:
            raise me.error

    def _lead(self) -> None:
        """Make the queued claims (this thread's first among them) in one
        transaction, then hand the lead to the first claim queued since."""
        with self._lock:
            batch = self._queue[:self.max_batch]
            del self._queue[:self.max_batch]
        try:
            self._commit(batch)
        finally:
            with self._lock:
                if self._queue:
                    self._queue[0].leads = True
                    self._queue[0].done.set()
                else:
                    self._leading = False
            for pending in batch[1:]:
                pending.done.set()

    def _commit(self, batch: list[_Pending]) -> None:
        if len(batch) == 1:
            [pending] = batch
            try:
                if len(pending.claims) == 1 and \
                        self.engine.dialect.name in consume.ONE_STATEMENT:
                    self._alone.run(lambda conn: consume.claim_alone(
                        conn, pending.claims[0], ttl=pending.ttl,
                        default_ratios=pending.default_ratios))
                else:
                    self._conn.run(lambda conn: consume.claim_in(
                        conn, pending.claims, ttl=pending.ttl,
                        default_ratios=pending.default_ratios))
            except BaseException as e:
                pending.error = e
            return
        metrics.claim_batch(len(batch))
        try:
            while True:
                try:
                    self._conn.run(lambda conn: self._claim_each(conn, batch))
                    return
                except _Repeated:
                    continue    # rolled back: the others again, without it
        except BaseException as e:
            # Nothing of the batch was written: every claim without an
            # outcome of its own fails as its lone transaction would have
            # (each with its own copy: the requests raise it in their own
            # threads, each with its own traceback).
            for pending in batch:
                if pending.error is None:
                    pending.error = copy.copy(e)

    @staticmethod
    def _claim_each(conn: sa.Connection, batch: list[_Pending]) -> None:
        """The claims of ``batch`` in ``conn``'s transaction, the nodes
        locked first; a lost race becomes that claim's own error.
        :raises _Repeated: a claim's consumer is placed already (its error
            set); the transaction must be rolled back.
        """
        # A run before this one was rolled back: its outcomes are void, but
        # a consumer found placed stays placed.
        todo = [p for p in batch
                if not isinstance(p.error, ConsumerExists)]
        for pending in todo:
            pending.error = None
        if not todo:
            return
        consume.lock_nodes(conn, {p.claims[0].node_id for p in todo})
        # Node order, stable: same node keeps arrival order.
        for pending in sorted(todo, key=lambda p: p.claims[0].node_id):
            try:
                consume.claim_in(conn, pending.claims, ttl=pending.ttl,
                                 default_ratios=pending.default_ratios)
            except ClaimConflict as e:
                pending.error = e
            except ConsumerExists as e:
                pending.error = e
                raise _Repeated() from e


class _Repeated(Exception):
    """A batch's claim found its consumer placed after its node's UPDATE
    (and on PostgreSQL the transaction is lost): roll back, go again."""
