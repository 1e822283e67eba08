"""Nova's 4.5 endpoint on a real SQLite database: every refusal is nova's
NoValidHost, replies are Selection primitives, casts never raise."""
from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
import uuid

from oslo_db import exception as db_exc
import oslo_messaging as messaging
import pytest

from scheduler.claims import lifecycle
from scheduler.claims import moves
from scheduler.db import models
from scheduler.nova import primitives
from scheduler.db import allocations
from scheduler.rpc.endpoint import SchedulerManager
from scheduler.nova.endpoint import NovaSchedulerEndpoint
from scheduler.nova.exception import NoValidHost
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import nested
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node
from tests.unit.nova import test_casts

CELL = "8f1b1c52-6c2d-4f0e-9d51-3c1e8f0a7b21"
VM = "11111111-2222-4333-8444-555555555555"
SAMPLE = json.loads(Path(__file__).with_name(
    "nova34_request_spec.json").read_text())


def spec_obj(**data):
    """nova 34's boot primitive, reduced to a plain boot."""
    primitive = copy.deepcopy(SAMPLE["spec_obj"])
    fields = primitive["nova_object.data"]
    for key in ("instance_group", "requested_destination", "retry"):
        fields[key] = None
    fields["ignore_hosts"] = None
    fields["scheduler_hints"] = {}
    # The fake nodes report no architecture for ImagePropertiesFilter.
    fields["image"]["nova_object.data"]["properties"][
        "nova_object.data"] = {}
    fields.update(data)
    return primitive


@pytest.fixture
def endpoint(conf, engine, register):
    register(node("h1"), node("h2"))
    conf.set_override("cell_uuid", CELL, group="nova")
    return NovaSchedulerEndpoint(SchedulerManager(conf, engine))


def refusal(call, *args, **kwargs) -> Exception:
    with pytest.raises(messaging.ExpectedException) as info:
        call(*args, **kwargs)
    error = info.value.exc_info[1]
    assert isinstance(error, NoValidHost)
    return error


def test_the_exception_is_named_as_novas_own():
    assert (NoValidHost.__module__, NoValidHost.__name__) == (
        "nova.exception", "NoValidHost")


def test_novas_refusal_is_counted_as_a_refusal(endpoint, caplog):
    caplog.set_level(logging.DEBUG, logger="scheduler.rpc.instrument")
    refusal(endpoint.select_destinations, {})
    [line] = [r.getMessage() for r in caplog.records
              if r.name == "scheduler.rpc.instrument"]
    assert line.startswith("select_destinations no_valid_host in ")


def test_a_boot_gets_selection_primitives_and_claims(endpoint, engine):
    [[chosen, alternate]] = endpoint.select_destinations(
        {}, spec_obj=spec_obj(), instance_uuids=[VM], return_objects=True,
        return_alternates=True)

    assert chosen["nova_object.name"] == "Selection"
    assert chosen["nova_object.data"]["cell_uuid"] == CELL
    assert {chosen["nova_object.data"]["service_host"],
            alternate["nova_object.data"]["service_host"]} == {"h1", "h2"}
    assert [r.consumer_uuid for r in allocation_rows(engine)] == [VM]


def test_a_node_without_a_uuid_is_named_by_one_nova_can_read(
        endpoint, engine):
    """nova 34's Selection.compute_node_uuid is a UUIDField that cannot be
    None (nova/objects/selection.py:43): one null Selection, chosen or
    alternate, and nova's conductor cannot read the reply at all, after
    the claim was made. Nova gives every node a uuid when it creates it
    (nova/objects/compute_node.py:345); an agent feeding our table may
    not. Such a node is named by a uuid derived from its host and node,
    the same in every reply (a re-send's too)."""
    for host in ("h1", "h2"):
        set_node(engine, host, uuid=None)
    kwargs = dict(spec_obj=spec_obj(), instance_uuids=[VM],
                  return_objects=True, return_alternates=True)
    [[chosen, alternate]] = endpoint.select_destinations({}, **kwargs)
    [[again]] = endpoint.select_destinations({}, **kwargs)

    named = {s["nova_object.data"]["service_host"]:
             s["nova_object.data"]["compute_node_uuid"]
             for s in (chosen, alternate)}
    assert None not in named.values(), named
    assert len(set(named.values())) == 2
    assert all(str(uuid.UUID(u)) == u for u in named.values())
    assert again["nova_object.data"]["compute_node_uuid"] == named[
        again["nova_object.data"]["service_host"]]


def test_without_a_cell_uuid_nova_is_refused_naming_the_option(
        endpoint, conf, engine):
    conf.clear_override("cell_uuid", group="nova")
    error = refusal(endpoint.select_destinations, {}, spec_obj=spec_obj(),
                    instance_uuids=[VM], return_objects=True)
    assert "[nova] cell_uuid" in str(error)
    assert allocation_rows(engine) == []


def test_malformed_and_unsupported_requests_are_no_valid_host(endpoint):
    error = refusal(endpoint.select_destinations, {}, spec_obj={"x": 1})
    assert "spec_obj" in str(error)
    error = refusal(endpoint.select_destinations, {},
                    spec_obj=spec_obj(requested_resources=[{"x": 1}]))
    assert "spec_obj.requested_resources" in str(error)
    error = refusal(endpoint.select_destinations, {})
    assert "spec_obj: missing" in str(error)


def test_a_hint_nested_too_deep_is_refused_naming_it(endpoint, engine):
    """500 levels deep, nova's hint was placed and carried into the
    planner unchecked (select_stack's RecursionError, issue 46); it is
    refused before the primitive is read, whose errors word values."""
    error = refusal(endpoint.select_destinations, {}, spec_obj=spec_obj(
        scheduler_hints={"deep": [nested(500)]}), instance_uuids=[VM])
    assert str(error) == (
        "spec_obj.nova_object.data.scheduler_hints...: nested deeper than "
        "the 64 levels allowed")
    legacy = copy.deepcopy(SAMPLE["legacy"])
    legacy["filter_properties"]["scheduler_hints"] = {"deep": nested(500)}
    error = refusal(endpoint.select_destinations, {}, **legacy)
    assert str(error) == ("filter_properties.scheduler_hints.deep...: "
                          "nested deeper than the 64 levels allowed")
    error = refusal(endpoint.select_destinations, {}, spec_obj=spec_obj(
        image={"nova_object.name": nested(500)}))
    assert str(error).startswith("spec_obj.nova_object.data.image...: ")
    assert allocation_rows(engine) == []


def test_the_legacy_pair_gets_the_old_dicts(endpoint):
    legacy = copy.deepcopy(SAMPLE["legacy"])
    for key in ("group_hosts", "group_members", "group_policies",
                "group_uuid", "requested_destination", "retry",
                "ignore_hosts", "scheduler_hints"):
        legacy["filter_properties"].pop(key)
    legacy["request_spec"]["image"]["properties"] = {}
    [destination] = endpoint.select_destinations(
        {}, request_spec=legacy["request_spec"],
        filter_properties=legacy["filter_properties"])
    assert destination["host"] in {"h1", "h2"}
    assert set(destination) == {"host", "nodename", "limits"}


def test_a_bad_cast_is_one_warning_and_nothing_else(endpoint, caplog):
    with caplog.at_level(logging.WARNING):
        endpoint.update_instance_info({}, host_name=None,
                                      instance_info={"x": 1})
        endpoint.sync_instance_info({}, host_name="h1",
                                    instance_uuids="not a list")
    assert [r.levelname for r in caplog.records] == ["WARNING", "WARNING"]
    assert "host_name" in caplog.records[0].getMessage()


def test_the_aggregate_casts_are_accepted(endpoint):
    assert endpoint.update_aggregates({}, aggregates=[{}]) is None
    assert endpoint.delete_aggregate({}, aggregate={}) is None


def test_a_rebuild_check_runs_on_the_host_nova_forces(endpoint, engine):
    # nova 34's rebuild with a new image names the instance's host only in
    # force_hosts/force_nodes; the conductor's destination names the cell.
    # The instance holds no claim here (placed before this scheduler ran).
    destination = {"nova_object.name": "Destination",
                   "nova_object.data": {"cell": {
                       "nova_object.name": "CellMapping",
                       "nova_object.data": {"uuid": CELL}}}}
    for host in ("h1", "h2"):
        [[chosen]] = endpoint.select_destinations(
            {}, spec_obj=spec_obj(
                scheduler_hints={"_nova_check_type": ["rebuild"]},
                force_hosts=[host], force_nodes=[host],
                requested_destination=destination),
            instance_uuids=[VM], return_objects=True,
            return_alternates=False)
        assert chosen["nova_object.data"]["service_host"] == host
    assert allocation_rows(engine) == []


def test_a_rebuild_check_runs_only_the_image_filters_as_nova(conf, engine,
                                                              register):
    # nova runs only the filters marked RUN_ON_REBUILD: a member of an
    # anti-affinity group is rebuilt in place, and a busy host takes it.
    conf.set_override("enabled_filters", [
        "ComputeFilter", "IoOpsFilter", "ServerGroupAntiAffinityFilter",
        "ImagePropertiesFilter"], group="filter_scheduler")
    conf.set_override("max_io_ops_per_host", 0, group="filter_scheduler")
    register(node("h1"), node("h2"))
    conf.set_override("cell_uuid", CELL, group="nova")
    endpoint = NovaSchedulerEndpoint(SchedulerManager(conf, engine))
    group = copy.deepcopy(SAMPLE["spec_obj"]["nova_object.data"][
        "instance_group"])
    group["nova_object.data"].update(hosts=["h1"], members=[VM])
    destination = {"nova_object.name": "Destination",
                   "nova_object.data": {"cell": {
                       "nova_object.name": "CellMapping",
                       "nova_object.data": {"uuid": CELL}}}}
    [[chosen]] = endpoint.select_destinations(
        {}, spec_obj=spec_obj(
            scheduler_hints={"_nova_check_type": ["rebuild"]},
            force_hosts=["h1"], force_nodes=["h1"],
            requested_destination=destination, instance_group=group),
        instance_uuids=[VM], return_objects=True, return_alternates=False)
    assert chosen["nova_object.data"]["service_host"] == "h1"
    # The image filters still run: an image for another architecture is
    # refused on the current host.
    arm = spec_obj(scheduler_hints={"_nova_check_type": ["rebuild"]},
                   force_hosts=["h1"], force_nodes=["h1"],
                   requested_destination=destination)
    arm["nova_object.data"]["image"]["nova_object.data"]["properties"][
        "nova_object.data"] = {"hw_architecture": "aarch64"}
    error = refusal(endpoint.select_destinations, {}, spec_obj=arm,
                    instance_uuids=[VM], return_objects=True,
                    return_alternates=False)
    assert "ImagePropertiesFilter removed 1" in str(error)
    assert allocation_rows(engine) == []


def _cell_destination(cell: str, cross_cell: bool | None = None) -> dict:
    data = {"cell": {"nova_object.name": "CellMapping",
                     "nova_object.data": {"uuid": cell}}}
    if cross_cell is not None:
        data["allow_cross_cell_move"] = cross_cell
    return {"nova_object.name": "Destination", "nova_object.data": data}


def test_a_move_restricted_to_another_cell_is_refused(endpoint, engine):
    """nova 34 (host_manager.get_host_states_by_uuids) looks only at the
    hosts of ``requested_destination.cell`` unless a cross-cell move is
    allowed: a same-cell move of an instance of another cell must not get
    a host of this one (nova's conductor would start a cross-cell resize
    that the policy did not allow)."""
    other = "99999999-6c2d-4f0e-9d51-3c1e8f0a7b21"
    error = refusal(endpoint.select_destinations, {}, spec_obj=spec_obj(
        requested_destination=_cell_destination(other)),
        instance_uuids=[VM], return_objects=True)
    assert other in str(error) and CELL in str(error)
    assert allocation_rows(engine) == []
    # Our own cell, or a cross-cell move allowed: placed.
    for destination in (_cell_destination(CELL),
                        _cell_destination(other, cross_cell=True)):
        endpoint.select_destinations(
            {}, spec_obj=spec_obj(requested_destination=destination),
            instance_uuids=[VM], return_objects=True)


def test_with_many_cells_a_move_kept_in_its_cell_gets_a_host_there(
        conf, engine, register):
    """Nova's databases as the host source: each host's Selection names
    its own cell, and a destination cell restricts the hosts to that
    cell's (its aggregate, as scheduler.novadb writes it)."""
    register(node("h1"), node("h2"))
    other = "99999999-6c2d-4f0e-9d51-3c1e8f0a7b21"
    with engine.begin() as conn:
        agg_id = conn.execute(models.aggregates.insert().values(
            uuid=primitives.cell_aggregate(other), name="nova cell other",
            deleted=0)).inserted_primary_key[0]
        conn.execute(models.aggregate_hosts.insert().values(
            host="h2", aggregate_id=agg_id, deleted=0))
    endpoint = NovaSchedulerEndpoint(SchedulerManager(conf, engine),
                                     {"h1": CELL, "h2": other}.get)

    [[chosen, *alternates]] = endpoint.select_destinations(
        {}, spec_obj=spec_obj(requested_destination=_cell_destination(other)),
        instance_uuids=[VM], return_objects=True, return_alternates=True)

    assert (chosen["nova_object.data"]["service_host"],
            chosen["nova_object.data"]["cell_uuid"]) == ("h2", other)
    assert alternates == []


def _instance(host: str, vm_state: str) -> dict:
    """An Instance primitive as update_instance_info casts it."""
    return {"nova_object.name": "Instance", "nova_object.data": {
        "uuid": test_casts.VM, "host": host, "vm_state": vm_state}}


def _used(engine) -> dict[str, int]:
    return {h: node_row(engine, h).memory_mb_used for h in ("h1", "h2")}


@pytest.mark.parametrize("vm_state, used", [
    ("resized", {"h1": 1024, "h2": 2048}),    # finish_resize, after the copy
    ("active", {"h1": 0, "h2": 1024}),        # evacuated or live-migrated,
    ("error", {"h1": 0, "h2": 1024}),         # forced: no scheduler asked
])
def test_only_finish_resize_restores_a_resize_that_expired(
        endpoint, engine, vm_state, used):
    """A resize whose destination expired is restored by the instance
    reported there resized (finish_resize), not by the instance forced
    there later by a move with no confirm step after the resize failed:
    that would charge the old host and the new size for good."""
    test_casts.claim(engine, "h1")
    endpoint.update_instance_info({}, host_name="h1",
                                  instance_info=_instance("h1", "active"))
    test_casts.claim(engine, "h2", move=[test_casts.VM], memory_mb=2048)
    test_casts._expire_now(engine)
    endpoint.update_instance_info({}, host_name="h2",
                                  instance_info=_instance("h2", vm_state))
    assert _used(engine) == used


def test_a_restarted_host_does_not_restore_a_failed_resize_in_place(
        endpoint, engine):
    """A resize on one host that failed after its destination expired:
    the host's start-up report (init_host lists every instance) names the
    instance where it was, not resized; only the old size stays charged."""
    test_casts.claim(engine, "h1")
    endpoint.update_instance_info({}, host_name="h1",
                                  instance_info=_instance("h1", "active"))
    test_casts.claim(engine, "h1", move=[test_casts.VM], memory_mb=2048)
    test_casts._expire_now(engine)
    endpoint.update_instance_info({}, host_name="h1", instance_info={
        "nova_object.name": "InstanceList", "nova_object.data": {
            "objects": [_instance("h1", "error")]}})
    assert _used(engine)["h1"] == 1024


def test_a_same_host_resize_confirm_with_its_commit_reply_lost_keeps_a_claim(
        endpoint, engine, monkeypatch):
    """nova confirms a resize on one host with delete_instance_info from
    that host (casts.gone: confirm the move). The database committed the
    confirm, then the connection was lost before its reply: the cast's
    retry must not read the now confirmed claim afresh as an instance
    gone from its host and release the only claim of a running
    instance."""
    from oslo_db import exception as db_exc

    test_casts.claim(engine, "h1")
    endpoint.update_instance_info({}, host_name="h1", instance_info={
        "nova_object.name": "Instance",
        "nova_object.data": {"uuid": test_casts.VM, "host": "h1"}})
    test_casts.claim(engine, "h1", move=[test_casts.VM], memory_mb=2048)
    real_confirm_move = moves.confirm_move
    lost = []

    def commit_then_lose_the_reply(*args, **kwargs):
        done = real_confirm_move(*args, **kwargs)
        if not lost:
            lost.append(True)
            raise db_exc.DBConnectionError("Lost connection to server "
                                           "during query")
        return done
    monkeypatch.setattr(moves, "confirm_move", commit_then_lose_the_reply)
    endpoint.delete_instance_info({}, host_name="h1",
                                  instance_uuid=test_casts.VM)
    assert lost
    [row] = allocation_rows(engine)
    assert (row.memory_mb, row.source_node_id) == (2048, None)
    assert node_row(engine, "h1").memory_mb_used == 2048


def test_a_cast_waits_one_outage_window_in_all_not_one_per_step(
        endpoint, engine, conf, monkeypatch, caplog):
    """[scheduler] db_outage_timeout is how long a cast waits for a
    database that cannot be reached. Each of a cast's transactions got a
    window of its own: a database away for most of the window while the
    cast read its claims, then away again for its release, held the cast
    (and its executor thread) for two windows, more for casts of more
    steps. The window is the cast's, counted from its arrival."""
    from oslo_db import exception as db_exc

    from scheduler.db import retry
    outage = conf.scheduler.db_outage_timeout
    test_casts.claim(engine, "h1")
    clock = {"now": 1000.0}

    def pause(seconds: float, away: bool = True) -> bool:
        clock["now"] += seconds
        return True
    monkeypatch.setattr(retry, "_pause", pause)
    monkeypatch.setattr(retry.time, "monotonic", lambda: clock["now"])
    real_holdings = allocations.holdings

    def away_for_most_of_the_window(*args, **kwargs):
        if clock["now"] < 1000.0 + outage * 2 / 3:
            raise db_exc.DBConnectionError("Lost connection to server")
        return real_holdings(*args, **kwargs)

    def away(*args, **kwargs):
        raise db_exc.DBConnectionError("Lost connection to server")
    monkeypatch.setattr(allocations, "holdings", away_for_most_of_the_window)
    monkeypatch.setattr(lifecycle, "release", away)
    caplog.set_level(logging.WARNING)
    endpoint.delete_instance_info({}, host_name="h1",
                                  instance_uuid=test_casts.VM)
    assert "not applied" in caplog.text
    # The window, then [scheduler] db_retries' retries, a second each.
    waited = clock["now"] - 1000.0
    assert waited <= outage + conf.scheduler.db_retries + 1, waited


@pytest.mark.parametrize("error, level, traceback", [
    # A bug: the operator cannot fix it, a developer needs where it was.
    (KeyError("host"), "ERROR", True),
    # The database: the operator's to fix, named in one line.
    (db_exc.DBConnectionError("Lost connection to server"), "WARNING",
     False),
], ids=["bug", "database"])
def test_a_cast_not_applied_logs_a_bug_with_its_traceback(
        endpoint, conf, monkeypatch, caplog, error, level, traceback):
    from scheduler.db import allocations

    def fails(*args, **kwargs):
        raise error
    conf.set_override("db_retries", 0, group="scheduler")
    conf.set_override("db_outage_timeout", 0, group="scheduler")
    endpoint = NovaSchedulerEndpoint(endpoint.manager)
    monkeypatch.setattr(allocations, "holdings", fails)
    with caplog.at_level(logging.WARNING, logger="scheduler.nova.endpoint"):
        endpoint.delete_instance_info({}, host_name="h1", instance_uuid=VM)
    [record] = caplog.records
    assert (record.levelname, record.exc_info is not None) == (
        level, traceback)
    assert "not applied" in record.getMessage()
    assert VM in record.getMessage()
