"""One claim attempt's assumption: planned usage put in the host table,
always settled and, unless the claim was won, forgotten.

A plan (a request's, a stack's, a drain's) is assumed in the driver's
scheduling cycle (``Driver._assume``: the next decision of this process
plans on it) and claimed after it. Whatever happens next, the claims
planned on this one must learn whether it was won, and a lost or failed
claim's usage must leave the table: a claim left assumed would hold the
claims planned on it. :class:`Assumption` is that rule, once::

    with Assumption(driver) as assumption:
        with driver.cycle() as table:
            ...plan...
            assumption.assume(placed, to_claim)
        assumption.claim(lambda: store.claim(...))
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from scheduler.hosts.planned import Claim
from scheduler.hosts.state import HostState
from scheduler.request.spec import Flavor


class Assumption:
    """The assumed claims of one attempt (see the module docstring).

    On leaving the block by an exception, what was assumed is forgotten
    (re-read from SQL) and the exception goes on; always, the claims are
    settled (won or lost) and the chooser told."""

    def __init__(self, driver: Any):
        self.driver = driver
        self.to_claim: list[Claim] = []
        self.nodes: list[int] = []
        self.won = False

    def assume(self, placed: Iterable[tuple[HostState, Flavor]],
               to_claim: list[Claim]) -> None:
        """Put ``placed`` (host as read, flavor per instance) in the table
        for ``to_claim``; call inside the driver's cycle."""
        self.to_claim = to_claim
        # The nodes _assume returns, known before it runs: an error in it
        # still forgets them.
        self.nodes = list(dict.fromkeys(c.node_id for c in to_claim))
        self.driver._assume(placed)

    def claim(self, write: Callable[[], None]) -> None:
        """Run ``write`` (the claim's transaction) once the claims of this
        process the plan counted on are won; mark the claim won.
        :raises: what ``write`` or
            :meth:`~scheduler.hosts.manager.HostManager.await_assumed`
            raise."""
        self.driver.host_manager.await_assumed(self.to_claim)
        write()
        self.won = True

    def __enter__(self) -> Assumption:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        manager = self.driver.host_manager
        if error is not None and self.nodes:
            manager.forget(self.nodes)
        manager.settle(self.to_claim, self.won)
        self.driver.chooser.claimed(self.nodes, won=self.won)
