"""Nova's scheduling semantics end to end: scheduler-server over RabbitMQ on
SQLite and PostgreSQL. Server groups across separate requests, forcing,
requested destinations, alternates, aggregates, same_host/different_host
hints, and explanations."""
from __future__ import annotations

import collections
import uuid

import pytest

from scheduler import exception
from scheduler.db import models
from tests.functional.conftest import node

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}


def _group(policy: str, group_uuid: str, max_per_host: int | None = None
           ) -> dict:
    group = {"uuid": group_uuid, "policies": [policy]}
    if max_per_host is not None:
        group["rules"] = {"max_server_per_host": max_per_host}
    return group


def _one(deployment, **spec) -> dict:
    [dest] = deployment.api.select_destinations(
        {}, {"flavor": FLAVOR, **spec})
    return dest


def _hosts(dests) -> list[str]:
    return [d["host"] for d in dests]


def _add_aggregate(deployment, name: str, hosts: list[str],
                   metadata: dict[str, str]) -> None:
    """What an operator's ``aggregate-create`` / ``add-host`` /
    ``set-metadata`` leaves in SQL: plain INSERTs."""
    with deployment.engine.begin() as conn:
        agg_id = conn.execute(models.aggregates.insert().values(
            uuid=str(uuid.uuid4()), name=name, deleted=0)
        ).inserted_primary_key[0]
        conn.execute(models.aggregate_hosts.insert(), [
            {"host": h, "aggregate_id": agg_id, "deleted": 0}
            for h in hosts])
        conn.execute(models.aggregate_metadata.insert(), [
            {"aggregate_id": agg_id, "key": k, "value": v, "deleted": 0}
            for k, v in metadata.items()])


# --- server groups ------------------------------------------------------------

def test_hard_anti_affinity_spreads_separate_requests_of_one_group(
        make_deployment):
    deployment = make_deployment()
    # the weighers alone would put every instance on h1
    deployment.add_nodes([node("h1", memory_mb=16384, vcpus=16),
                          node("h2"), node("h3")])
    deployment.start_server()
    group = str(uuid.uuid4())

    placed = [_one(deployment, instance_group=_group("anti-affinity", group))
              for _ in range(3)]
    assert sorted(_hosts(placed)) == ["h1", "h2", "h3"]
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, instance_group=_group("anti-affinity", group))
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. ServerGroupAntiAffinityFilter "
        "removed 3 (server group anti-affinity: host already holds a "
        "member)")
    # another group is not constrained by this one
    assert _one(deployment, instance_group=_group(
        "anti-affinity", str(uuid.uuid4())))["host"] == "h1"
    rows = deployment.allocations()
    assert collections.Counter(r.group_uuid for r in rows)[group] == 3


def test_anti_affinity_max_server_per_host_two(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("a", memory_mb=8192), node("b")])
    deployment.start_server()
    group = str(uuid.uuid4())

    placed = [_one(deployment, instance_group=_group("anti-affinity", group,
                                                     max_per_host=2))
              for _ in range(4)]
    assert collections.Counter(_hosts(placed)) == {"a": 2, "b": 2}
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, instance_group=_group("anti-affinity", group,
                                               max_per_host=2))
    assert "ServerGroupAntiAffinityFilter removed 2" in caught.value.message
    # a released member frees its place
    deployment.api.release({}, [placed[0]["uuid"]])
    assert _one(deployment, instance_group=_group(
        "anti-affinity", group, max_per_host=2))["host"] == \
        placed[0]["host"]


def test_affinity_keeps_members_together_across_requests(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("small", memory_mb=8192)])
    deployment.start_server()
    group = str(uuid.uuid4())
    assert _one(deployment, instance_group=_group(
        "affinity", group))["host"] == "small"

    # a roomier host arrives; the weighers alone would choose it
    deployment.add_nodes([node("big", memory_mb=65536, vcpus=32,
                               local_gb=1000)])
    more = deployment.api.select_destinations({}, {
        "flavor": FLAVOR, "num_instances": 2,
        "instance_group": _group("affinity", group)})
    assert _hosts(more) == ["small", "small"]
    assert _one(deployment, instance_group=_group(
        "affinity", group))["host"] == "small"
    assert _one(deployment)["host"] == "big"     # the control


def test_soft_anti_affinity_prefers_empty_hosts_but_never_refuses(
        make_deployment):
    # RAM weigher stacking: without the group everything piles up (on
    # one of the three equal hosts: among equals the choice is free)
    deployment = make_deployment(
        filter_scheduler__weighers="RAMWeigher,"
                                   "ServerGroupSoftAntiAffinityWeigher",
        filter_scheduler__ram_weight_multiplier=-1.0,
        filter_scheduler__soft_anti_affinity_weight_multiplier=2.0)
    deployment.add_nodes([node("h1", memory_mb=8192),
                          node("h2", memory_mb=8192),
                          node("h3", memory_mb=8192)])
    deployment.start_server()
    control = [_one(deployment) for _ in range(2)]
    assert len(set(_hosts(control))) == 1

    group = str(uuid.uuid4())
    placed = [_one(deployment, instance_group=_group("soft-anti-affinity",
                                                     group))
              for _ in range(3)]
    assert sorted(_hosts(placed)) == ["h1", "h2", "h3"]
    # more members than hosts: soft, so still placed
    more = deployment.api.select_destinations({}, {
        "flavor": FLAVOR, "num_instances": 3,
        "instance_group": _group("soft-anti-affinity", group)})
    assert sorted(_hosts(more)) == ["h1", "h2", "h3"]
    assert len(deployment.allocations()) == 8


# --- targeting -------------------------------------------------------------------

def test_forcing_skips_the_filters_but_not_capacity(make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("h1", memory_mb=16384), node("h2"),
                          node("tiny", memory_mb=512)])
    deployment.manage("service", "disable", "h2", "--reason", "maint")
    deployment.start_server()

    # nova 34: placement's mandatory compute_status_filter holds for a
    # forced host too (nova/scheduler/request_filter.py:248).
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, force_hosts=["h2"])
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. force_hosts removed 2 (not a "
        "forced host), compute_status_filter removed 1 (service disabled)")
    deployment.manage("service", "enable", "h2")

    forced = _one(deployment, force_hosts=["h2"])
    assert (forced["host"], forced["limits"]) == ("h2", {})
    assert _one(deployment, force_hosts=["H2"])["host"] == "h2"
    assert _one(deployment, force_nodes=["h2"])["host"] == "h2"

    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, force_hosts=["nowhere"])
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. force_hosts removed 3 (not a "
        "forced host; no compute host is named nowhere)")
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, force_hosts=["tiny"])
    assert "the forced host has no room" in caught.value.message
    assert deployment.nodes()["tiny"].memory_mb_used == 0


def test_requested_destination_narrows_but_filters_still_run(
        make_deployment):
    deployment = make_deployment()
    deployment.add_nodes([node("h1", memory_mb=16384), node("h2"),
                          node("h3", memory_mb=2048)])
    deployment.start_server()

    assert _one(deployment, requested_destination={
        "host": "h2"})["host"] == "h2"
    with pytest.raises(exception.NoValidHost) as caught:
        deployment.api.select_destinations({}, {
            "flavor": dict(FLAVOR, memory_mb=4096),
            "requested_destination": {"host": "h3"}})
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. requested_destination removed 2 "
        "(not the requested host), RamFilter removed 1 (insufficient RAM: "
        "need 4096 MB)")

    # A host that does not exist is named, as nova 34's "No such host".
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, requested_destination={"host": "h4"})
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. requested_destination removed 3 "
        "(not the requested host; no compute host is named h4)")

    deployment.manage("service", "disable", "h2")
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, requested_destination={"host": "h2"})
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. requested_destination removed 2 "
        "(not the requested host), ComputeFilter removed 1 (service down or "
        "disabled)")


# --- alternates --------------------------------------------------------------------

def test_return_alternates_are_ranked_but_never_claimed(make_deployment):
    deployment = make_deployment(scheduler__max_attempts=3)
    deployment.add_nodes([node(f"h{i}", memory_mb=4096 + 1024 * i)
                          for i in range(6)])
    deployment.start_server()

    dests = deployment.api.select_destinations({}, {
        "flavor": FLAVOR, "num_instances": 3, "return_alternates": True})
    for d in dests:
        alternates = d["alternates"]
        assert len(alternates) == 2          # [scheduler] max_attempts - 1
        assert d["host"] not in [a["host"] for a in alternates]
        # compute_node_uuid: nova's Selection needs it for an alternate.
        assert all(set(a) == {"host", "nodename", "limits",
                              "compute_node_uuid"} for a in alternates)
        assert all(a["limits"]["memory_mb"] > 0 for a in alternates)
    # the first instance gets the best host; as in nova, every instance's
    # alternates are one list, weighed once all of them are planned (the
    # most RAM left first), and hold no host selected for any of them
    assert dests[0]["host"] == "h5"
    selected = _hosts(dests)
    left = {f"h{i}": 4096 + 1024 * i - FLAVOR["memory_mb"] * selected.count(
        f"h{i}") for i in range(6)}
    best = sorted((h for h in left if h not in selected),
                  key=lambda h: -left[h])[:2]
    assert left[best[1]] > max(left[h] for h in left
                               if h not in selected + best)
    for d in dests:
        assert [a["host"] for a in d["alternates"]] == best

    # only the selected hosts hold claims
    assert len(deployment.allocations()) == 3
    used = {h: n.memory_mb_used for h, n in deployment.nodes().items()}
    assert used == {h: 1024 * _hosts(dests).count(h) for h in used}

    # fewer candidates than max_attempts: as many alternates as there are
    [lone] = deployment.api.select_destinations({}, {
        "flavor": FLAVOR, "return_alternates": True,
        "ignore_hosts": ["h0", "h1", "h2", "h3"]})
    assert len(lone["alternates"]) == 1
    # not asked for: none
    assert "alternates" not in _one(deployment)


# --- aggregates ---------------------------------------------------------------------

def test_aggregate_extra_specs_and_tenant_isolation(make_deployment):
    deployment = make_deployment(
        filter_scheduler__enabled_filters="ComputeFilter,RamFilter,"
                                          "AggregateInstanceExtraSpecsFilter,"
                                          "AggregateMultiTenancyIsolation")
    deployment.add_nodes([node("gold", memory_mb=65536, vcpus=32,
                               local_gb=1000),
                          node("fast", memory_mb=16384, vcpus=8),
                          node("plain")])
    deployment.start_server()
    # aggregates changed while the server runs: seen on the next request
    _add_aggregate(deployment, "reserved", ["gold"],
                   {"filter_tenant_id": "p-gold,p-platinum"})
    _add_aggregate(deployment, "ssd", ["fast"], {"ssd": "true"})
    ssd = dict(FLAVOR, extra_specs={
        "aggregate_instance_extra_specs:ssd": "true"})

    assert _one(deployment, project_id="p1")["host"] == "fast"
    assert _one(deployment, project_id="p-gold")["host"] == "gold"
    assert _one(deployment, project_id="p1", flavor=ssd)["host"] == "fast"
    assert _one(deployment, project_id="p-platinum",
                flavor=ssd)["host"] == "fast"

    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, project_id="p1", flavor=dict(FLAVOR, extra_specs={
            "aggregate_instance_extra_specs:ssd": "false"}))
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. AggregateInstanceExtraSpecsFilter "
        "removed 3 (aggregate metadata does not match the flavor's extra "
        "specs: aggregate_instance_extra_specs:ssd=false)")
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, project_id="p1", force_hosts=[],
             ignore_hosts=["fast", "plain"])
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. ignore_hosts removed 2 (ignored "
        "by the request), AggregateMultiTenancyIsolation removed 1 (in an "
        "aggregate reserved for other projects (project p1))")


# --- same_host / different_host -------------------------------------------------------

def test_same_host_and_different_host_hints(make_deployment):
    deployment = make_deployment(
        filter_scheduler__enabled_filters="ComputeFilter,RamFilter,"
                                          "SameHostFilter,"
                                          "DifferentHostFilter")
    deployment.add_nodes([node("big", memory_mb=65536, vcpus=32,
                               local_gb=1000),
                          node("mid", memory_mb=16384, vcpus=8),
                          node("low", memory_mb=8192)])
    deployment.start_server()
    first = _one(deployment, force_hosts=["low"])
    other = _one(deployment)
    assert other["host"] == "big"

    near = deployment.api.select_destinations({}, {
        "flavor": FLAVOR, "num_instances": 2,
        "scheduler_hints": {"same_host": [first["uuid"]]}})
    assert _hosts(near) == ["low", "low"]
    # nova's API sends one uuid as a string
    assert _one(deployment, scheduler_hints={
        "same_host": first["uuid"].upper()})["host"] == "low"
    away = _one(deployment, scheduler_hints={
        "different_host": [first["uuid"], other["uuid"]]})
    assert away["host"] == "mid"

    unknown = str(uuid.uuid4())
    with pytest.raises(exception.NoValidHost) as caught:
        _one(deployment, scheduler_hints={"same_host": [unknown]})
    assert caught.value.message == (
        "No valid host: 0/3 hosts passed. SameHostFilter removed 3 (holds "
        "none of the instances in the same_host hint (0 of 1 hinted "
        "instance(s) placed by this scheduler))")
    with pytest.raises(exception.InvalidRequest) as caught:
        _one(deployment, scheduler_hints={"same_host": ["low"]})
    assert caught.value.message == (
        "spec.scheduler_hints.same_host: 'low' is not an instance uuid")

    # nova 4.0's shape: the hints come in filter_properties
    result = deployment.api.client.prepare(version="1.0").call(
        {}, "select_destinations",
        request_spec={"instance_type": dict(FLAVOR, flavorid="1"),
                      "instance_properties": {"uuid": str(uuid.uuid4())},
                      "num_instances": 1},
        filter_properties={"scheduler_hints": {
            "different_host": [first["uuid"], away["uuid"]],
            "same_host": [other["uuid"], first["uuid"]]}})
    assert result[0]["host"] == "big"


# --- explanations ---------------------------------------------------------------------

def test_explanations_list_each_filter_in_order_with_its_reason(
        make_deployment):
    deployment = make_deployment(
        filter_scheduler__enabled_filters="AvailabilityZoneFilter,"
                                          "ComputeFilter,RamFilter,"
                                          "CoreFilter,DiskFilter")
    deployment.add_nodes([node("other-zone", zone="az2"),
                          node("disabled"),
                          node("low-ram", memory_mb=1024),
                          node("few-cpus", vcpus=1),
                          node("small-disk", local_gb=10)])
    deployment.manage("service", "disable", "disabled")
    deployment.start_server()
    spec = {"flavor": {"memory_mb": 2048, "vcpus": 2, "root_gb": 20},
            "availability_zone": "az1"}

    with pytest.raises(exception.NoValidHost) as caught:
        deployment.api.select_destinations({}, spec)
    assert caught.value.message == (
        "No valid host: 0/5 hosts passed. AvailabilityZoneFilter removed 1 "
        "(not in the requested availability zone (az1)), ComputeFilter "
        "removed 1 (service down or disabled), RamFilter removed 1 "
        "(insufficient RAM: need 2048 MB), CoreFilter removed 1 "
        "(insufficient vCPUs: need 2), DiskFilter removed 1 (insufficient "
        "disk: need 20 GB)")

    ranking = deployment.api.rank_destinations({}, spec, limit=10)
    assert ranking["hosts"] == [] and ranking["total"] == 5
    assert [(f["name"], f["in"], f["out"], f["sample"])
            for f in ranking["filters"]] == [
        ("AvailabilityZoneFilter", 5, 4, ["other-zone"]),
        ("ComputeFilter", 4, 3, ["disabled"]),
        ("RamFilter", 3, 2, ["low-ram"]),
        ("CoreFilter", 2, 1, ["few-cpus"]),
        ("DiskFilter", 1, 0, ["small-disk"])]
    assert ranking["filters"][2]["reason"] == "insufficient RAM: need 2048 MB"

    # a request that fits: filters that removed nothing are listed too
    small = {"flavor": FLAVOR, "availability_zone": "az1",
             "ignore_hosts": ["low-ram"]}
    ranking = deployment.api.rank_destinations({}, small, limit=10)
    assert [(f["name"], f["in"], f["out"], f["sample"])
            for f in ranking["filters"]] == [
        ("ignore_hosts", 5, 4, ["low-ram"]),
        ("AvailabilityZoneFilter", 4, 3, ["other-zone"]),
        ("ComputeFilter", 3, 2, ["disabled"]),
        ("RamFilter", 2, 2, []), ("CoreFilter", 2, 2, []),
        ("DiskFilter", 2, 2, [])]
    assert sorted(h["host"] for h in ranking["hosts"]) == [
        "few-cpus", "small-disk"]
    assert deployment.allocations() == []
