"""scheduler.admin.audit: the audit of usage against allocations, and
the fix."""
from __future__ import annotations

import pytest

from scheduler.admin import aggregates
from scheduler.admin import audit
from scheduler.hosts import capacity
from scheduler.db import models
from scheduler.claims import lifecycle
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node


A1 = "12121212-0000-4000-8000-000000000001"
A2 = "12121212-0000-4000-8000-000000000002"
A3 = "12121212-0000-4000-8000-000000000003"

DEFAULTS = capacity.Ratios(16.0, 1.5, 1.0)


def _claim(engine, host, consumer, vcpus=2, memory_mb=1024, disk_gb=10):
    """An allocation and its usage written straight to SQL, as a writer
    without the claim's capacity check could (what the audit is for)."""
    row = node_row(engine, host)
    nodes = models.compute_nodes
    with engine.begin() as conn:
        conn.execute(models.allocations.insert().values(
            consumer_uuid=consumer, compute_node_id=row.id, vcpus=vcpus,
            memory_mb=memory_mb, disk_gb=disk_gb))
        conn.execute(nodes.update().where(nodes.c.id == row.id).values(
            vcpus_used=nodes.c.vcpus_used + vcpus,
            memory_mb_used=nodes.c.memory_mb_used + memory_mb,
            local_gb_used=nodes.c.local_gb_used + disk_gb,
            generation=nodes.c.generation + 1))


def _audit(engine, ratios=DEFAULTS):
    return audit.audit_allocations(engine, ratios)


def test_audit_of_balanced_books_is_empty(register, engine):
    register(node("h1"), node("h2"))
    assert _audit(engine) == []
    _claim(engine, "h1", A1)
    _claim(engine, "h1", A2)
    _claim(engine, "h2", A3, vcpus=8, memory_mb=8192, disk_gb=100)  # full
    assert _audit(engine) == []
    lifecycle.release(engine, [A1])
    assert _audit(engine) == []


def test_audit_reports_a_usage_mismatch_per_resource(register, engine):
    register(node("h2"), node("h1", vcpus=8, memory_mb=8192, local_gb=100,
                              cpu_ratio=2.0, ram_ratio=1.5))
    _claim(engine, "h1", A1)
    _claim(engine, "h2", A2)
    set_node(engine, "h1", vcpus_used=5)
    assert _audit(engine) == [
        {"host": "h1", "node": "h1", "resource": "vcpus",
         "problem": "usage mismatch", "used": 5, "allocated": 2,
         "capacity": 16.0}]

    set_node(engine, "h1", memory_mb_used=0, local_gb_used=11)
    set_node(engine, "h2", local_gb_used=0)
    problems = _audit(engine)
    assert [(p["host"], p["resource"], p["used"], p["allocated"],
             p["capacity"]) for p in problems] == [
        ("h1", "vcpus", 5, 2, 16.0),
        ("h1", "memory_mb", 0, 1024, 8192 * 1.5),
        ("h1", "disk_gb", 11, 10, 100.0),
        ("h2", "disk_gb", 0, 10, 100.0)]
    assert {p["problem"] for p in problems} == {"usage mismatch"}


def test_audit_reports_usage_without_allocations(register, engine):
    register(node("h1"))
    set_node(engine, "h1", memory_mb_used=2048)
    assert _audit(engine) == [
        {"host": "h1", "node": "h1", "resource": "memory_mb",
         "problem": "usage mismatch", "used": 2048, "allocated": 0,
         "capacity": 8192.0}]


def test_audit_reports_allocations_over_capacity(register, engine):
    register(node("h1", vcpus=4, memory_mb=4096, local_gb=100,
                  cpu_ratio=1.0, ram_ratio=1.0))
    # claims do not check capacity (the filters do): force it over
    _claim(engine, "h1", A1, vcpus=5, memory_mb=4096, disk_gb=100)
    assert _audit(engine) == [
        {"host": "h1", "node": "h1", "resource": "vcpus",
         "problem": "over capacity", "used": 5, "allocated": 5,
         "capacity": 4.0}]
    # exactly at capacity is fine; the node's ratio counts
    set_node(engine, "h1", cpu_allocation_ratio=1.25)
    assert _audit(engine) == []


def test_audit_mismatch_and_over_capacity_together(register, engine):
    register(node("h1", vcpus=4, cpu_ratio=1.0))
    _claim(engine, "h1", A1, vcpus=6)
    set_node(engine, "h1", vcpus_used=1)
    assert [(p["resource"], p["problem"], p["used"], p["allocated"])
            for p in _audit(engine)] == [
        ("vcpus", "usage mismatch", 1, 6),
        ("vcpus", "over capacity", 1, 6)]


@pytest.mark.parametrize("unset", [None, 0.0])
def test_audit_uses_the_defaults_when_the_node_has_no_ratio(register,
                                                            engine, unset):
    register(node("h1", vcpus=4, memory_mb=4096, local_gb=100))
    set_node(engine, "h1", cpu_allocation_ratio=unset,
             ram_allocation_ratio=unset, disk_allocation_ratio=unset)
    _claim(engine, "h1", A1, vcpus=8, memory_mb=6144, disk_gb=150)
    assert _audit(engine, capacity.Ratios(2.0, 1.5, 1.5)) == []
    problems = _audit(engine, capacity.Ratios(1.5, 1.25, 1.0))
    assert [(p["resource"], p["problem"], p["capacity"])
            for p in problems] == [
        ("vcpus", "over capacity", 6.0),
        ("memory_mb", "over capacity", 5120.0),
        ("disk_gb", "over capacity", 100.0)]


def test_audit_prefers_the_node_ratio_to_the_defaults(register, engine):
    register(node("h1", vcpus=4, cpu_ratio=1.0))
    _claim(engine, "h1", A1, vcpus=6)
    assert [p["resource"] for p in _audit(
        engine, capacity.Ratios(16.0, 16.0, 16.0))] == ["vcpus"]


def test_audit_judges_by_the_ratio_the_scheduler_enforces(register,
                                                          engine):
    # Filled under an aggregate's ram_allocation_ratio 2.0, as a scheduler
    # running AggregateRamFilter plans and claims it.
    register(node("h1", memory_mb=4096, ram_ratio=1.0))
    aggregates.create_aggregate(engine, "overcommit")
    aggregates.add_aggregate_host(engine, "overcommit", "h1")
    aggregates.set_aggregate_metadata(engine, "overcommit",
                                      {"ram_allocation_ratio": "2.0"})
    _claim(engine, "h1", A1, vcpus=1, memory_mb=6144)
    assert audit.audit_allocations(engine, DEFAULTS,
                                   ["AggregateRamFilter"]) == []
    # RamFilter too: the host passes both, so the node's own 1.0 holds.
    assert [(p["resource"], p["capacity"]) for p in audit.audit_allocations(
        engine, DEFAULTS, ["RamFilter", "AggregateRamFilter"])] == [
        ("memory_mb", 4096.0)]


def test_audit_skips_deleted_nodes(register, engine):
    register(node("h1"), node("gone"))
    set_node(engine, "gone", vcpus_used=3)
    set_node(engine, "gone", deleted=node_row(engine, "gone").id)
    assert _audit(engine) == []


def test_fix_usage_recomputes_from_allocations(register, engine):
    register(node("h1"), node("h2"), node("h3"))
    _claim(engine, "h1", A1, vcpus=2, memory_mb=1024, disk_gb=10)
    _claim(engine, "h1", A2, vcpus=1, memory_mb=512, disk_gb=5)
    _claim(engine, "h2", A3)
    set_node(engine, "h1", vcpus_used=0, memory_mb_used=99,
             local_gb_used=1, free_ram_mb=1, free_disk_gb=1)
    set_node(engine, "h3", vcpus_used=4, memory_mb_used=4096,
             local_gb_used=40)
    gens = {h: node_row(engine, h).generation for h in ("h1", "h2", "h3")}
    assert len(_audit(engine)) == 6

    assert audit.fix_usage(engine) == 2
    assert _audit(engine) == []
    h1, h2, h3 = (node_row(engine, h) for h in ("h1", "h2", "h3"))
    assert (h1.vcpus_used, h1.memory_mb_used, h1.local_gb_used,
            h1.free_ram_mb, h1.free_disk_gb) == (3, 1536, 15, 8192 - 1536,
                                                 85)
    assert (h3.vcpus_used, h3.memory_mb_used, h3.local_gb_used,
            h3.free_ram_mb, h3.free_disk_gb) == (0, 0, 0, 8192, 100)
    # plans made on the old numbers lose their claims; h2 was right
    assert h1.generation == gens["h1"] + 1
    assert h3.generation == gens["h3"] + 1
    assert h2.generation == gens["h2"]
    assert (h2.vcpus_used, h2.memory_mb_used) == (2, 1024)

    assert audit.fix_usage(engine) == 0
    assert node_row(engine, "h1").generation == gens["h1"] + 1


def test_fix_usage_on_balanced_books_changes_nothing(register, engine):
    register(node("h1"))
    _claim(engine, "h1", A1)
    before = node_row(engine, "h1")
    assert audit.fix_usage(engine) == 0
    assert node_row(engine, "h1") == before


def test_fix_usage_leaves_deleted_nodes(register, engine):
    register(node("gone"))
    set_node(engine, "gone", vcpus_used=3)
    set_node(engine, "gone", deleted=node_row(engine, "gone").id)
    assert audit.fix_usage(engine) == 0
