"""Operator actions on services, hosts, nodes and aggregates."""
from __future__ import annotations

import datetime
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from scheduler import admin
from scheduler.hosts import capacity
from scheduler.db import compute
from scheduler.db import models
from scheduler.claims import consume
from scheduler.claims import lifecycle
from scheduler.hosts.planned import Claim
from scheduler import exception
from tests.unit.conftest import fresh_host_manager
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node
from tests.unit.fakes import set_service


def test_disable_and_enable(register, engine, host_manager):
    register(node("h1"), node("h2"))
    admin.set_service_disabled(engine, "h1", True, "broken disk")
    services = {s["host"]: s for s in admin.list_services(engine)}
    assert services["h1"]["disabled"] is True
    assert services["h1"]["disabled_reason"] == "broken disk"
    assert services["h2"]["disabled"] is False
    states = {s.host: s for s in host_manager.host_states()}
    assert states["h1"].service_disabled is True

    admin.set_service_disabled(engine, "h1", False, "ignored")
    services = {s["host"]: s for s in admin.list_services(engine)}
    assert services["h1"]["disabled"] is False
    assert services["h1"]["disabled_reason"] is None


def test_set_service_disabled_unknown_host(register, engine):
    register(node("h1"))
    with pytest.raises(exception.NotFound) as info:
        admin.set_service_disabled(engine, "nope", True)
    assert "nope" in info.value.message


def test_set_service_disabled_deleted_or_other_binary(register, engine):
    register(node("gone"), node("conductor"))
    set_service(engine, "gone", deleted=1)
    set_service(engine, "conductor", binary="nova-conductor")
    for host in ("gone", "conductor"):
        with pytest.raises(exception.NotFound):
            admin.set_service_disabled(engine, host, True)


def test_list_services(register, engine):
    register(node("b"), node("a"))
    set_service(engine, "b", forced_down=True)
    services = admin.list_services(engine)
    assert [s["host"] for s in services] == ["a", "b"]
    assert services[1]["forced_down"] is True
    assert all(0 <= s["heartbeat_age"] < 60 for s in services)


def test_list_nodes(register, engine):
    register(node("h2", vcpus=4), node("h1", vcpus=8, ram_ratio=1.5))
    nodes = admin.list_nodes(engine)
    assert [n["host"] for n in nodes] == ["h1", "h2"]
    assert nodes[0]["vcpus"] == 8
    assert nodes[0]["ram_allocation_ratio"] == 1.5
    assert nodes[0]["generation"] == 0


# --- allocations audit and fix ---------------------------------------------

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
    return admin.audit_allocations(engine, ratios)


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
    admin.create_aggregate(engine, "overcommit")
    admin.add_aggregate_host(engine, "overcommit", "h1")
    admin.set_aggregate_metadata(engine, "overcommit",
                                 {"ram_allocation_ratio": "2.0"})
    _claim(engine, "h1", A1, vcpus=1, memory_mb=6144)
    assert admin.audit_allocations(engine, DEFAULTS,
                                   ["AggregateRamFilter"]) == []
    # RamFilter too: the host passes both, so the node's own 1.0 holds.
    assert [(p["resource"], p["capacity"]) for p in admin.audit_allocations(
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

    assert admin.fix_usage(engine) == 2
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

    assert admin.fix_usage(engine) == 0
    assert node_row(engine, "h1").generation == gens["h1"] + 1


def test_fix_usage_on_balanced_books_changes_nothing(register, engine):
    register(node("h1"))
    _claim(engine, "h1", A1)
    before = node_row(engine, "h1")
    assert admin.fix_usage(engine) == 0
    assert node_row(engine, "h1") == before


def test_fix_usage_leaves_deleted_nodes(register, engine):
    register(node("gone"))
    set_node(engine, "gone", vcpus_used=3)
    set_node(engine, "gone", deleted=node_row(engine, "gone").id)
    assert admin.fix_usage(engine) == 0


# --- compute hosts ------------------------------------------------------------

HOURS_AGO = datetime.datetime(2000, 1, 1)


def _add_node(engine, host, nodename, **values):
    """A second compute node on ``host`` (fleets make one per host)."""
    fields = {"uuid": str(uuidlib.uuid4()), "host": host,
              "hypervisor_hostname": nodename, "vcpus": 4,
              "memory_mb": 4096, "local_gb": 50, "cpu_info": "{}",
              "deleted": 0, "cpu_allocation_ratio": 2.0,
              "ram_allocation_ratio": 1.0, "disk_allocation_ratio": 1.0}
    fields.update(values)
    with engine.begin() as conn:
        return conn.execute(models.compute_nodes.insert().values(**fields)
                            ).inserted_primary_key[0]


def _hosts(engine, down_time=60, default_zone="nova"):
    return {h["host"]: h for h in admin.list_compute_hosts(
        engine, down_time, default_zone)}


@pytest.mark.parametrize("forced_down, age, down_time, state", [
    (False, 0.0, 60, "up"), (False, 60.0, 60, "up"),
    (False, 60.5, 60, "down"), (True, 0.0, 60, "down"),
    (False, None, 60, "down")])
def test_service_state(forced_down, age, down_time, state):
    assert admin.service_state(forced_down, age, down_time) == state


def test_list_compute_hosts(register, engine):
    register(node("h3"), node("h1", zone="az2"), node("h2"))
    _add_node(engine, "h1", "h1-b")
    set_service(engine, "h2", disabled=True, disabled_reason="disk")
    set_service(engine, "h3", forced_down=True)
    hosts = admin.list_compute_hosts(engine, 60, "nova")
    assert hosts == [
        {"host": "h1", "status": "enabled", "disabled_reason": None,
         "state": "up", "nodes": 2, "zones": ["az2"]},
        {"host": "h2", "status": "disabled", "disabled_reason": "disk",
         "state": "up", "nodes": 1, "zones": ["az1"]},
        {"host": "h3", "status": "enabled", "disabled_reason": None,
         "state": "down", "nodes": 1, "zones": ["az1"]}]


def test_list_compute_hosts_state_by_heartbeat_age(register, engine):
    register(node("old"), node("new"), node("never"))
    set_service(engine, "old", last_seen_up=HOURS_AGO)
    set_service(engine, "never", last_seen_up=None, updated_at=None,
                created_at=None)
    hosts = _hosts(engine)
    assert {h: hosts[h]["state"] for h in hosts} == {
        "old": "down", "new": "up", "never": "down"}
    # a long enough service_down_time makes an old heartbeat good
    assert _hosts(engine, down_time=10 ** 10)["old"]["state"] == "up"


def test_list_compute_hosts_only_live_compute_services(register, engine):
    register(node("h1"), node("gone"), node("conductor"))
    set_service(engine, "gone", deleted=99)
    set_service(engine, "conductor", binary="nova-conductor")
    assert list(_hosts(engine)) == ["h1"]
    assert admin.list_compute_hosts(engine, 60, "nova")[0]["nodes"] == 1


def test_list_compute_hosts_counts_live_nodes_only(register, engine):
    register(node("h1"))
    set_node(engine, "h1", deleted=node_row(engine, "h1").id)
    assert _hosts(engine)["h1"]["nodes"] == 0


def test_list_compute_hosts_zones(register, engine):
    register(node("h1"), node("h2", zone="az2"))
    admin.create_aggregate(engine, "ssd")                 # no zone
    admin.create_aggregate(engine, "fast", zone="az9")
    admin.add_aggregate_host(engine, "ssd", "h1")
    admin.add_aggregate_host(engine, "fast", "h2")
    hosts = _hosts(engine)
    assert hosts["h1"]["zones"] == ["az1"]
    assert hosts["h2"]["zones"] == ["az2", "az9"]
    # no aggregate with a zone: the default zone
    admin.remove_aggregate_host(engine, "az1", "h1")
    assert _hosts(engine, default_zone="dflt")["h1"]["zones"] == ["dflt"]
    # a deleted aggregate's zone does not count
    admin.delete_aggregate(engine, "fast", force=True)
    assert _hosts(engine)["h2"]["zones"] == ["az2"]


P1, P2 = "project-1", "project-2"


def _placed(engine, host, consumer, project_id, vcpus=2, memory_mb=1024,
            disk_gb=10, nodename=None):
    n = models.compute_nodes
    with engine.connect() as conn:
        row = conn.execute(sa.select(n).where(
            n.c.host == host, n.c.deleted == 0,
            n.c.hypervisor_hostname == (nodename or host))).one()
    consume.claim(engine, [Claim(
        consumer_uuid=consumer, node_id=row.id, host=host,
        generation=row.generation, vcpus=vcpus, memory_mb=memory_mb,
        disk_gb=disk_gb, project_id=project_id)])


def _describe(engine, host, ratios=DEFAULTS, down_time=60,
              default_zone="nova"):
    return admin.describe_host(engine, host, service_down_time=down_time,
                               default_zone=default_zone,
                               default_ratios=ratios)


def test_describe_host(register, engine):
    register(node("h1", vcpus=8, memory_mb=8192, local_gb=100,
                  cpu_ratio=4.0, ram_ratio=1.5), node("h2"))
    _placed(engine, "h1", A1, P2)
    _placed(engine, "h1", A2, P1, vcpus=1, memory_mb=512, disk_gb=5)
    _placed(engine, "h1", A3, P2)
    _placed(engine, "h2", "12121212-0000-4000-8000-000000000009", P1)
    admin.create_aggregate(engine, "fast", zone="az9")
    admin.add_aggregate_host(engine, "fast", "h1")
    admin.set_aggregate_metadata(engine, "fast", {"ssd": "true"})
    info = _describe(engine, "h1")
    node_uuid = node_row(engine, "h1").uuid
    assert info == {
        "host": "h1", "status": "enabled", "disabled_reason": None,
        "state": "up", "zones": ["az1", "az9"],
        "aggregates": [
            {"name": "az1", "metadata": {"availability_zone": "az1"}},
            {"name": "fast", "metadata": {"availability_zone": "az9",
                                          "ssd": "true"}}],
        "nodes": [{
            "node": "h1", "uuid": node_uuid,
            "resources": [
                {"resource": "vcpus", "total": 8, "ratio": 4.0,
                 "capacity": 32.0, "used": 5},
                {"resource": "memory_mb", "total": 8192, "ratio": 1.5,
                 "capacity": 12288.0, "used": 2560},
                {"resource": "disk_gb", "total": 100, "ratio": 1.0,
                 "capacity": 100.0, "used": 25}],
            "projects": [
                {"project_id": P1, "instances": 1, "moving": 0, "vcpus": 1,
                 "memory_mb": 512, "disk_gb": 5},
                {"project_id": P2, "instances": 2, "moving": 0, "vcpus": 4,
                 "memory_mb": 2048, "disk_gb": 20}]}]}


def test_describe_host_several_nodes_and_default_ratios(register, engine):
    register(node("h1"))
    _add_node(engine, "h1", "h1-b", cpu_allocation_ratio=None,
              ram_allocation_ratio=0.0)
    _add_node(engine, "h1", "h1-gone", deleted=12345)
    _placed(engine, "h1", A1, None, nodename="h1-b")
    _placed(engine, "h1", A2, P1, nodename="h1-b")
    info = _describe(engine, "h1", ratios=capacity.Ratios(3.0, 2.0, 1.0))
    assert [n["node"] for n in info["nodes"]] == ["h1", "h1-b"]
    first, second = info["nodes"]
    assert first["projects"] == []
    assert [(r["ratio"], r["capacity"]) for r in second["resources"]] == [
        (3.0, 12.0), (2.0, 8192.0), (1.0, 50.0)]
    # claims without a project come last
    assert [p["project_id"] for p in second["projects"]] == [P1, None]


def test_describe_host_shows_the_ratio_the_scheduler_enforces(register,
                                                              engine):
    # The same rule as the audit and the claim: an aggregate's ratio under
    # AggregateRamFilter, the node's own under RamFilter alone.
    register(node("h1", memory_mb=4096, ram_ratio=1.0))
    admin.create_aggregate(engine, "overcommit")
    admin.add_aggregate_host(engine, "overcommit", "h1")
    admin.set_aggregate_metadata(engine, "overcommit",
                                 {"ram_allocation_ratio": "2.0"})

    def memory(filters):
        info = admin.describe_host(engine, "h1", service_down_time=60,
                                   default_zone="nova",
                                   default_ratios=DEFAULTS,
                                   enabled_filters=filters)
        [resource] = [r for r in info["nodes"][0]["resources"]
                      if r["resource"] == "memory_mb"]
        return resource["ratio"], resource["capacity"]

    assert memory(["AggregateRamFilter"]) == (2.0, 8192.0)
    assert memory(["RamFilter"]) == (1.0, 4096.0)


def test_describe_host_state_and_status(register, engine):
    register(node("h1"))
    admin.remove_aggregate_host(engine, "az1", "h1")
    set_service(engine, "h1", disabled=True, disabled_reason="broken",
                last_seen_up=HOURS_AGO)
    info = _describe(engine, "h1", default_zone="dflt")
    assert (info["status"], info["disabled_reason"], info["state"],
            info["zones"], info["aggregates"]) == (
        "disabled", "broken", "down", ["dflt"], [])


def test_describe_host_without_nodes(register, engine):
    register(node("h1"))
    set_node(engine, "h1", deleted=node_row(engine, "h1").id)
    assert _describe(engine, "h1")["nodes"] == []


@pytest.mark.parametrize("host", ["nope", "gone", "conductor"])
def test_describe_unknown_host(register, engine, host):
    register(node("h1"), node("gone"), node("conductor"))
    set_service(engine, "gone", deleted=99)
    set_service(engine, "conductor", binary="nova-conductor")
    with pytest.raises(exception.NotFound) as info:
        _describe(engine, host)
    assert info.value.message == f"no compute host {host!r}"


# --- aggregates ---------------------------------------------------------------

def _rows(engine, table, **where):
    with engine.connect() as conn:
        return conn.execute(sa.select(table).where(
            *(table.c[k] == v for k, v in where.items()))
            .order_by(table.c.id)).all()


def _counter(engine):
    with engine.connect() as conn:
        return compute.changes(conn)[0].aggregates


def test_create_aggregate(engine):
    created = admin.create_aggregate(engine, "fast", zone="az9")
    assert created["name"] == "fast"
    assert created["hosts"] == []
    assert created["metadata"] == {"availability_zone": "az9"}
    assert uuidlib.UUID(created["uuid"])
    plain = admin.create_aggregate(engine, "plain")
    assert plain["metadata"] == {}
    assert [a["name"] for a in admin.list_aggregates(engine)] == [
        "fast", "plain"]
    row = _rows(engine, models.aggregates, name="fast")[0]
    assert (row.deleted, row.deleted_at) == (0, None)
    assert row.created_at is not None


def test_create_aggregate_duplicate_name(engine):
    admin.create_aggregate(engine, "fast")
    with pytest.raises(exception.InvalidRequest) as info:
        admin.create_aggregate(engine, "fast", zone="az9")
    assert info.value.message == "aggregate 'fast' already exists"
    assert len(_rows(engine, models.aggregates, name="fast")) == 1
    # the name is free again once the aggregate is deleted
    admin.delete_aggregate(engine, "fast")
    assert admin.create_aggregate(engine, "fast")["name"] == "fast"


@pytest.mark.parametrize("name, zone, message", [
    ("", None, "aggregate name must not be empty"),
    ("x" * 256, None, "aggregate name is longer than 255 characters"),
    ("ok", "", "availability zone must not be empty")])
def test_create_aggregate_invalid(engine, name, zone, message):
    with pytest.raises(exception.InvalidRequest) as info:
        admin.create_aggregate(engine, name, zone=zone)
    assert info.value.message == message
    assert admin.list_aggregates(engine) == []


def test_list_aggregates(register, engine):
    register(node("h2"), node("h1"), node("h3", zone="az2"))
    aggregates = admin.list_aggregates(engine)
    assert [(a["name"], a["hosts"], a["metadata"]) for a in aggregates] == [
        ("az1", ["h1", "h2"], {"availability_zone": "az1"}),
        ("az2", ["h3"], {"availability_zone": "az2"}),
        ("az3", [], {"availability_zone": "az3"})]
    assert admin.get_aggregate(engine, "az2")["hosts"] == ["h3"]
    with pytest.raises(exception.NotFound) as info:
        admin.get_aggregate(engine, "nope")
    assert info.value.message == "no aggregate 'nope'"


def test_add_and_remove_host(register, engine, conf):
    register(node("h1"), node("h2"))
    admin.create_aggregate(engine, "fast", zone="az9")
    manager = fresh_host_manager(conf, engine)
    assert {s.host: s.availability_zones()
            for s in manager.host_states()}["h1"] == {"az1"}
    before = _counter(engine)
    admin.add_aggregate_host(engine, "fast", "h1")
    assert _counter(engine) > before        # the triggers saw it
    assert admin.get_aggregate(engine, "fast")["hosts"] == ["h1"]
    # a running scheduler picks the change up
    assert {s.host: s.availability_zones()
            for s in manager.host_states()}["h1"] == {"az1", "az9"}

    admin.remove_aggregate_host(engine, "fast", "h1")
    assert admin.get_aggregate(engine, "fast")["hosts"] == []
    row = _rows(engine, models.aggregate_hosts, host="h1")[-1]
    assert row.deleted == row.id and row.deleted_at is not None
    assert {s.host: s.availability_zones()
            for s in manager.host_states()}["h1"] == {"az1"}
    # and it can be added again (the old row stays soft-deleted)
    admin.add_aggregate_host(engine, "fast", "h1")
    assert admin.get_aggregate(engine, "fast")["hosts"] == ["h1"]
    assert len(_rows(engine, models.aggregate_hosts, host="h1")) == 3


def test_add_host_twice(register, engine):
    register(node("h1"))
    admin.create_aggregate(engine, "fast")
    admin.add_aggregate_host(engine, "fast", "h1")
    with pytest.raises(exception.InvalidRequest) as info:
        admin.add_aggregate_host(engine, "fast", "h1")
    assert info.value.message == "host 'h1' is already in aggregate 'fast'"
    assert admin.get_aggregate(engine, "fast")["hosts"] == ["h1"]


def test_add_host_twice_racing_is_still_refused(register, engine,
                                                monkeypatch):
    """If a concurrent add commits between the check and the insert, the
    unique constraint refuses the second row; the error is the same."""
    register(node("h1"))
    admin.create_aggregate(engine, "fast")
    admin.add_aggregate_host(engine, "fast", "h1")
    real_select = sa.select

    def blind_select(*columns, **kw):
        query = real_select(*columns, **kw)
        if len(columns) == 1 and columns[0] is models.aggregate_hosts.c.id:
            return query.where(sa.false())    # the check sees nothing
        return query
    monkeypatch.setattr(admin.sa, "select", blind_select)
    with pytest.raises(exception.InvalidRequest) as info:
        admin.add_aggregate_host(engine, "fast", "h1")
    assert info.value.message == "host 'h1' is already in aggregate 'fast'"


@pytest.mark.parametrize("aggregate, host, message", [
    ("nope", "h1", "no aggregate 'nope'"),
    ("fast", "nope", "no compute host 'nope'"),
    ("fast", "gone", "no compute host 'gone'"),
    ("fast", "conductor", "no compute host 'conductor'")])
def test_add_host_unknown(register, engine, aggregate, host, message):
    register(node("h1"), node("gone"), node("conductor"))
    set_service(engine, "gone", deleted=99)
    set_service(engine, "conductor", binary="nova-conductor")
    admin.create_aggregate(engine, "fast")
    with pytest.raises(exception.NotFound) as info:
        admin.add_aggregate_host(engine, aggregate, host)
    assert info.value.message == message
    assert admin.get_aggregate(engine, "fast")["hosts"] == []


def test_add_host_to_a_deleted_aggregate(register, engine):
    register(node("h1"))
    admin.create_aggregate(engine, "fast")
    admin.delete_aggregate(engine, "fast")
    with pytest.raises(exception.NotFound) as info:
        admin.add_aggregate_host(engine, "fast", "h1")
    assert info.value.message == "no aggregate 'fast'"


def test_remove_host_errors(register, engine):
    register(node("h1"), node("h2"))
    admin.create_aggregate(engine, "fast")
    admin.add_aggregate_host(engine, "fast", "h1")
    with pytest.raises(exception.NotFound) as info:
        admin.remove_aggregate_host(engine, "fast", "h2")
    assert info.value.message == "host 'h2' is not in aggregate 'fast'"
    with pytest.raises(exception.NotFound) as info:
        admin.remove_aggregate_host(engine, "nope", "h1")
    assert info.value.message == "no aggregate 'nope'"
    admin.remove_aggregate_host(engine, "fast", "h1")
    with pytest.raises(exception.NotFound):
        admin.remove_aggregate_host(engine, "fast", "h1")


def test_remove_a_host_that_is_no_longer_a_compute_host(register, engine):
    register(node("h1"))
    admin.create_aggregate(engine, "fast")
    admin.add_aggregate_host(engine, "fast", "h1")
    set_service(engine, "h1", deleted=99)
    admin.remove_aggregate_host(engine, "fast", "h1")
    assert admin.get_aggregate(engine, "fast")["hosts"] == []


def test_delete_aggregate_soft_deletes_it_with_hosts_and_metadata(
        register, engine):
    register(node("h1"), node("h2"))
    agg = admin.create_aggregate(engine, "fast", zone="az9")
    admin.set_aggregate_metadata(engine, "fast", {"ssd": "true"})
    admin.add_aggregate_host(engine, "fast", "h1")
    admin.add_aggregate_host(engine, "fast", "h2")
    other = admin.create_aggregate(engine, "other", zone="az8")
    admin.add_aggregate_host(engine, "other", "h1")

    with pytest.raises(exception.InvalidRequest) as info:
        admin.delete_aggregate(engine, "fast")
    assert info.value.message == (
        "aggregate 'fast' still has 2 host(s): h1, h2; remove them first "
        "or use --force")
    assert admin.get_aggregate(engine, "fast")["hosts"] == ["h1", "h2"]

    before = _counter(engine)
    assert admin.delete_aggregate(engine, "fast", force=True) == ["h1",
                                                                  "h2"]
    assert _counter(engine) > before
    assert [a["name"] for a in admin.list_aggregates(engine)] == [
        "az1", "az2", "az3", "other"]
    for table, column in ((models.aggregates, "id"),
                          (models.aggregate_hosts, "aggregate_id"),
                          (models.aggregate_metadata, "aggregate_id")):
        rows = _rows(engine, table, **{column: agg["id"]})
        assert rows
        assert all(r.deleted == r.id and r.deleted_at is not None
                   for r in rows), table.name
    # the other aggregate is untouched
    assert admin.get_aggregate(engine, "other") == {
        **other, "hosts": ["h1"]}
    with pytest.raises(exception.NotFound) as info:
        admin.delete_aggregate(engine, "fast")
    assert info.value.message == "no aggregate 'fast'"


def test_delete_an_empty_aggregate(engine):
    admin.create_aggregate(engine, "fast", zone="az9")
    assert admin.delete_aggregate(engine, "fast") == []
    assert admin.list_aggregates(engine) == []
    with pytest.raises(exception.NotFound):
        admin.delete_aggregate(engine, "nope", force=True)


def test_set_aggregate_metadata(register, engine, conf):
    register(node("h1"))
    admin.create_aggregate(engine, "fast", zone="az9")
    admin.add_aggregate_host(engine, "fast", "h1")
    assert admin.set_aggregate_metadata(
        engine, "fast", {"ssd": "true", "cpu_allocation_ratio": "2.0"}) == {
        "availability_zone": "az9", "cpu_allocation_ratio": "2.0",
        "ssd": "true"}
    # change one, remove one (empty or None), ignore an absent key
    before = _counter(engine)
    assert admin.set_aggregate_metadata(
        engine, "fast", {"availability_zone": "az8", "ssd": "",
                         "cpu_allocation_ratio": None, "absent": ""}) == {
        "availability_zone": "az8"}
    assert _counter(engine) > before
    assert admin.get_aggregate(engine, "fast")["metadata"] == {
        "availability_zone": "az8"}
    states = fresh_host_manager(conf, engine).host_states()
    assert {s.host: s.availability_zones() for s in states}["h1"] == {
        "az1", "az8"}
    removed = [r for r in _rows(engine, models.aggregate_metadata)
               if r.key in ("ssd", "cpu_allocation_ratio")]
    assert len(removed) == 2
    assert all(r.deleted == r.id and r.deleted_at for r in removed)
    zone = _rows(engine, models.aggregate_metadata,
                 key="availability_zone", value="az8")[0]
    assert zone.deleted == 0 and zone.updated_at is not None
    # a removed key can be set again
    assert admin.set_aggregate_metadata(engine, "fast", {"ssd": "no"})[
        "ssd"] == "no"
    # setting the same value again changes nothing
    before = _counter(engine)
    admin.set_aggregate_metadata(engine, "fast", {"ssd": "no"})
    assert _counter(engine) == before


@pytest.mark.parametrize("name, metadata, error, message", [
    ("nope", {"a": "b"}, exception.NotFound, "no aggregate 'nope'"),
    ("fast", {}, exception.InvalidRequest, "no metadata to set"),
    ("fast", {"": "b"}, exception.InvalidRequest,
     "metadata key must not be empty"),
    ("fast", {"k" * 256: "b"}, exception.InvalidRequest,
     "metadata key is longer than 255 characters"),
    ("fast", {"a": "v" * 256}, exception.InvalidRequest,
     "value of metadata key 'a' is longer than 255 characters")])
def test_set_aggregate_metadata_errors(engine, name, metadata, error,
                                       message):
    admin.create_aggregate(engine, "fast")
    with pytest.raises(error) as info:
        admin.set_aggregate_metadata(engine, name, metadata)
    assert info.value.message == message
    assert admin.get_aggregate(engine, "fast")["metadata"] == {}
