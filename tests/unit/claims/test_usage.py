"""What a claim holds on its nodes: both sides of a move in flight."""
from __future__ import annotations

import types

from scheduler.claims import usage


def _row(node, vcpus, memory_mb, disk_gb, source=None, reported=None,
         source_reported=False):
    """An allocation row as DELETE ... RETURNING gives it back."""
    return types.SimpleNamespace(
        compute_node_id=node, vcpus=vcpus, memory_mb=memory_mb,
        disk_gb=disk_gb, source_node_id=source and source[0],
        source_vcpus=source and source[1],
        source_memory_mb=source and source[2],
        source_disk_gb=source and source[3], reported_node_id=reported,
        source_reported=source_reported)


def test_freed_by_gives_back_both_sides_of_a_move():
    rows = [_row(1, 2, 1024, 10), _row(2, 4, 2048, 20, (3, 1, 512, 5))]
    assert usage.freed_by(iter(rows)) == [
        (1, 2, 1024, 10), (2, 4, 2048, 20), (3, 1, 512, 5)]
    assert usage.held(rows) == [(1, 2, 1024, 10), (2, 4, 2048, 20)]
    assert usage.sources(rows) == [(3, 1, 512, 5)]


def test_what_a_nova_report_holds_is_not_given_back():
    """Nova's databases as the host source: a side its node's report
    holds counts there, not on top; ending the claim gives back only what
    counted on top."""
    rows = [_row(1, 2, 1024, 10, reported=1),
            _row(2, 4, 2048, 20, (3, 1, 512, 5), reported=9,
                 source_reported=True)]
    assert usage.freed_by(rows) == [(2, 4, 2048, 20)]
