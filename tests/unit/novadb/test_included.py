"""When a nova compute's report includes a claim (novadb.included)."""
from __future__ import annotations

import datetime
from types import SimpleNamespace

from scheduler.novadb import included

T0 = datetime.datetime(2026, 11, 29, 12, 0, 0)
LATER = T0 + datetime.timedelta(seconds=1)


def node(updated_at=T0):
    return SimpleNamespace(host="c1", hypervisor_hostname="c1",
                           updated_at=updated_at)


def instance(host="c1", node="c1", vm_state="building", task_state=None,
             updated_at=T0, deleted=0):
    return SimpleNamespace(host=host, node=node, vm_state=vm_state,
                           task_state=task_state, updated_at=updated_at,
                           deleted=deleted)


def migration(status="pre-migrating", updated_at=T0):
    return SimpleNamespace(status=status, updated_at=updated_at,
                           source_compute="c0", source_node="c0",
                           dest_compute="c1", dest_node="c1")


def test_not_built_yet_is_not_in_the_report():
    assert not included.claim_included(None, node())
    assert not included.claim_included(instance(host=None, node=None),
                                       node(LATER))


def test_claimed_by_the_compute_only_once_the_node_is_written_after():
    # The compute wrote host and node on the instance; the node's save
    # with the usage comes next. Equal whole seconds (MySQL) are not after.
    assert not included.claim_included(instance(), node(T0))
    assert included.claim_included(instance(), node(LATER))


def test_moved_on_past_the_claim_the_report_has_it_whatever_the_times():
    # ACTIVE after the node's last write: the node is not written again
    # while nothing changes, and its report has the instance.
    assert included.claim_included(
        instance(vm_state="active", updated_at=LATER), node(T0))
    assert included.claim_included(
        instance(task_state="networking", updated_at=LATER), node(T0))


def test_on_another_node_or_deleted_it_is_not_this_reports():
    assert not included.claim_included(instance(node="c2",
                                                vm_state="active"), node())
    assert not included.claim_included(
        instance(vm_state="active", deleted=7), node(LATER))


def test_an_arrival_by_its_migration_to_the_node():
    assert not included.arrival_included(None, migration(), node(T0))
    assert included.arrival_included(None, migration(), node(LATER))
    assert included.arrival_included(None, migration("migrating"),
                                     node(T0))
    assert not included.arrival_included(None, migration("error"),
                                         node(LATER))
