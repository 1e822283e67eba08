"""scheduler.admin.compute_hosts: nodes, compute hosts, one host in
detail."""
from __future__ import annotations

import datetime
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from scheduler.admin import aggregates
from scheduler.admin import compute_hosts
from scheduler.hosts import capacity
from scheduler.db import models
from scheduler.claims import consume
from scheduler.hosts.planned import Claim
from scheduler import exception
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node
from tests.unit.fakes import set_service


A1 = "12121212-0000-4000-8000-000000000001"
A2 = "12121212-0000-4000-8000-000000000002"
A3 = "12121212-0000-4000-8000-000000000003"

DEFAULTS = capacity.Ratios(16.0, 1.5, 1.0)


def test_list_nodes(register, engine):
    register(node("h2", vcpus=4), node("h1", vcpus=8, ram_ratio=1.5))
    nodes = compute_hosts.list_nodes(engine)
    assert [n["host"] for n in nodes] == ["h1", "h2"]
    assert nodes[0]["vcpus"] == 8
    assert nodes[0]["ram_allocation_ratio"] == 1.5
    assert nodes[0]["generation"] == 0


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
    return {h["host"]: h for h in compute_hosts.list_compute_hosts(
        engine, down_time, default_zone)}


def test_list_compute_hosts(register, engine):
    register(node("h3"), node("h1", zone="az2"), node("h2"))
    _add_node(engine, "h1", "h1-b")
    set_service(engine, "h2", disabled=True, disabled_reason="disk")
    set_service(engine, "h3", forced_down=True)
    hosts = compute_hosts.list_compute_hosts(engine, 60, "nova")
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
    hosts = compute_hosts.list_compute_hosts(engine, 60, "nova")
    assert hosts[0]["nodes"] == 1


def test_list_compute_hosts_counts_live_nodes_only(register, engine):
    register(node("h1"))
    set_node(engine, "h1", deleted=node_row(engine, "h1").id)
    assert _hosts(engine)["h1"]["nodes"] == 0


def test_list_compute_hosts_zones(register, engine):
    register(node("h1"), node("h2", zone="az2"))
    aggregates.create_aggregate(engine, "ssd")                 # no zone
    aggregates.create_aggregate(engine, "fast", zone="az9")
    aggregates.add_aggregate_host(engine, "ssd", "h1")
    aggregates.add_aggregate_host(engine, "fast", "h2")
    hosts = _hosts(engine)
    assert hosts["h1"]["zones"] == ["az1"]
    assert hosts["h2"]["zones"] == ["az2", "az9"]
    # no aggregate with a zone: the default zone
    aggregates.remove_aggregate_host(engine, "az1", "h1")
    assert _hosts(engine, default_zone="dflt")["h1"]["zones"] == ["dflt"]
    # a deleted aggregate's zone does not count
    aggregates.delete_aggregate(engine, "fast", force=True)
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
    return compute_hosts.describe_host(
        engine, host, service_down_time=down_time, default_zone=default_zone,
        default_ratios=ratios)


def test_describe_host(register, engine):
    register(node("h1", vcpus=8, memory_mb=8192, local_gb=100,
                  cpu_ratio=4.0, ram_ratio=1.5), node("h2"))
    _placed(engine, "h1", A1, P2)
    _placed(engine, "h1", A2, P1, vcpus=1, memory_mb=512, disk_gb=5)
    _placed(engine, "h1", A3, P2)
    _placed(engine, "h2", "12121212-0000-4000-8000-000000000009", P1)
    aggregates.create_aggregate(engine, "fast", zone="az9")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    aggregates.set_aggregate_metadata(engine, "fast", {"ssd": "true"})
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
    aggregates.create_aggregate(engine, "overcommit")
    aggregates.add_aggregate_host(engine, "overcommit", "h1")
    aggregates.set_aggregate_metadata(engine, "overcommit",
                                      {"ram_allocation_ratio": "2.0"})

    def memory(filters):
        info = compute_hosts.describe_host(engine, "h1", service_down_time=60,
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
    aggregates.remove_aggregate_host(engine, "az1", "h1")
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
