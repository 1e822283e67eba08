"""Does a node's report include a claim: the one owner of the rule.

Nova's compute claims an instance by writing its host and node on the
instance row, then saving its node with the usage added (the resource
tracker's ``instance_claim``; ``_move_claim`` writes the migration's
destination first in the same way). So a claim is in the report once its
instance is on the node in the cell database *and* the node was written
after that. Until then our claim counts on top of the report; from then
on it does not: never both (a placed instance counted twice) and never
neither (a window where it is invisible).

"The node was written after that" is read two ways, either enough:

- the node's ``updated_at`` is later than the instance's (or migration's),
  which is all there is right after the claim; nova's timestamps on MySQL
  are whole seconds, so equal is *not* later;
- the instance (migration) has moved on past the state the claim left it
  in: the compute only goes on (networking, block devices, spawning) after
  the node was saved. This is what holds once the instance is written
  again after the node (it becomes ACTIVE) while the node, unchanged, is
  not written for a while.

The reads that feed it take the instances first and the nodes after, so a
report read is never older than the instance state that vouches for it.

A move's source is what its compute reports (its tracker counts an
outgoing migration until the move ends): see
:func:`scheduler.novadb.mirror.write_nodes`.
"""
from __future__ import annotations

import sqlalchemy as sa

from scheduler.novadb.reading import ENDED

#: An instance's states right after the compute's claim wrote its host
#: and node, before anything else (``_do_build_and_run_instance`` set
#: these before claiming).
_CLAIMING = frozenset((None, "scheduling"))
#: A migration's statuses right after (or before) the destination's claim.
_MIGRATION_CLAIMING = frozenset(("pre-migrating", "accepted", "queued"))


def _later(node: sa.Row, written) -> bool:
    return (node.updated_at is not None and written is not None
            and node.updated_at > written)


def on_node(instance: sa.Row | None, node: sa.Row) -> bool:
    """The instance is live on ``node`` in the cell database."""
    return (instance is not None and not instance.deleted
            and instance.host == node.host
            and instance.node == node.hypervisor_hostname)


def claim_included(instance: sa.Row | None, node: sa.Row) -> bool:
    """The report of ``node`` (a cell's compute node row) includes the
    instance: it is on the node, and the node was written after its
    compute claimed it."""
    if not on_node(instance, node):
        return False
    if instance.vm_state in (None, "building") and \
            instance.task_state in _CLAIMING:
        return _later(node, instance.updated_at)
    return True


def arrival_included(instance: sa.Row | None, migration: sa.Row | None,
                     node: sa.Row) -> bool:
    """The report of ``node``, the destination of a move, includes the
    instance arriving: it is there already (:func:`claim_included`), or
    its migration in progress goes there and the node's claim for it is
    written."""
    if claim_included(instance, node):
        return True
    if migration is None or migration.status in ENDED or \
            migration.dest_compute != node.host or \
            migration.dest_node != node.hypervisor_hostname:
        return False
    if migration.status in _MIGRATION_CLAIMING:
        return _later(node, migration.updated_at)
    return True
