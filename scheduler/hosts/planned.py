"""What a plan hands the claim step, and the refusal that sends it back.

A plan ends in one :class:`Claim` per instance: the node it chose, as the
planner read it (its ``generation``), and what the instance takes there.
The host manager keys what it assumed by the same node and generation
(:meth:`scheduler.hosts.manager.HostManager.assume`), and the claim
(``scheduler.claims``) writes it only if the node is still at that
generation. When what the plan was based on is gone — the node moved on,
or a claim of this process it counted on was lost — the answer is
:class:`ClaimConflict`: forget, re-read, plan again.

Both live here, below the claims, because the planning cycle speaks them
too: the claim step is above the hosts in the pipeline and imports them,
never the other way round.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Claim:
    consumer_uuid: str
    node_id: int
    host: str
    generation: int      # the node's generation the plan was made against
    vcpus: int
    memory_mb: int
    disk_gb: int
    project_id: str | None = None
    user_id: str | None = None
    group_uuid: str | None = None
    #: The limits the planner enforced on this node (``vcpu``,
    #: ``memory_mb``, ``disk_gb``: total × the ratio it applied); the claim
    #: checks the same. A resource without one (a forced host, a planner
    #: without that filter) is checked against the node's own ratio.
    limits: dict[str, float] = dataclasses.field(default_factory=dict)


class ClaimConflict(Exception):
    """What the plan was based on changed; plan again."""

    def __init__(self, message: str, node_id: int | None = None):
        super().__init__(message)
        self.node_id = node_id
