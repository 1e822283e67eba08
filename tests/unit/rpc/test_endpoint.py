"""SchedulerManager on a real SQLite database: argument checks at the edge,
confirm/release counts, and the periodic release of expired claims.

Methods decorated with ``@messaging.expected_exceptions`` wrap what they
raise in ``oslo_messaging.ExpectedException`` when called directly (the RPC
dispatcher unwraps it); ``exc_info[1]`` is the original exception."""
from __future__ import annotations

import datetime
import logging

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler.decide import choice
from scheduler.claims import consume
from scheduler.hosts.planned import Claim
from scheduler import exception
from scheduler.db import clock
from scheduler.db import models
from scheduler.rpc.endpoint import SchedulerManager
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import nested
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import spec_dict

U = [f"99999999-0000-4000-8000-{i:012d}" for i in range(6)]


@pytest.fixture
def manager(conf, engine):
    return SchedulerManager(conf, engine)


@pytest.mark.parametrize("driver", ["filter_scheduler", "chance_scheduler",
                                    "caching_scheduler"])
def test_every_driver_chooses_as_its_workers_share(conf, engine, driver):
    conf.set_override("driver", driver, group="scheduler")
    share = choice.Share(1, 3)
    assert SchedulerManager(conf, engine, share).driver.chooser.share == share


def _raised(call, *args, **kwargs):
    """The exception ``call`` raised, unwrapped from ExpectedException."""
    with pytest.raises(messaging.ExpectedException) as info:
        call(*args, **kwargs)
    return info.value.exc_info[1]


def _spec(uuids, memory_mb=1024):
    return spec_dict(instance_uuids=list(uuids),
                     flavor={"memory_mb": memory_mb, "vcpus": 1,
                             "root_gb": 10})


def _expires(engine):
    a = models.allocations
    with engine.connect() as conn:
        return dict(conn.execute(sa.select(a.c.consumer_uuid,
                                           a.c.expires_at)).all())


def _expire_now(engine, *uuids):
    a = models.allocations
    with engine.begin() as conn:
        past = clock.db_time(conn) - datetime.timedelta(seconds=10)
        conn.execute(a.update().where(a.c.consumer_uuid.in_(uuids))
                     .values(expires_at=past))


@pytest.mark.parametrize("bad", [
    None, "99999999-0000-4000-8000-000000000000", {"u": 1}, 7,
    [1], ["ok", None], ["x" * 37], ("a", "b")])
def test_confirm_validates_consumer_uuids(manager, bad):
    error = _raised(manager.confirm, {}, bad)
    assert type(error) is exception.InvalidRequest
    assert error.message.startswith("consumer_uuids:")
    assert error.message == ("consumer_uuids: expected a list of at most "
                             "1000 uuids")


def test_confirm_and_release_limit_the_list(conf, engine):
    conf.set_override("max_instances_per_request", 2, group="scheduler")
    manager = SchedulerManager(conf, engine)
    for method in (manager.confirm, manager.release):
        error = _raised(method, {}, U[:3])
        assert error.message == ("consumer_uuids: expected a list of at "
                                 "most 2 uuids")
        assert method({}, U[:2]) == 0


def test_release_validates_consumer_uuids(manager):
    error = _raised(manager.release, {}, "not-a-list")
    assert type(error) is exception.InvalidRequest
    assert error.message.startswith("consumer_uuids:")


@pytest.mark.parametrize("written", [
    "{" + U[0].replace("-", "") + "}", "urn:" + U[0].replace("-", ""),
    U[0].replace("-", "")[:4] + "-" + U[0].replace("-", "")[4:]])
@pytest.mark.parametrize("method", ["release", "confirm", "confirm_move",
                                    "revert_move"])
def test_consumer_ids_select_destinations_refuses_are_refused_alike(
        manager, method, written):
    """One rule reads a consumer uuid (scheduler.request.names): these
    methods took braces, ``urn:`` and stray dashes (``uuid.UUID``'s
    reading), which select_destinations refuses."""
    selected = _raised(manager.select_destinations, {},
                       spec=_spec([written]))
    assert type(selected) is exception.InvalidRequest
    error = _raised(getattr(manager, method), {}, [U[1], written])
    assert type(error) is exception.InvalidRequest
    assert error.message == f"consumer_uuids: {written!r} is not a UUID"


CONSUMER_METHODS = ["release", "confirm", "confirm_move", "revert_move"]


@pytest.mark.parametrize("method", CONSUMER_METHODS)
@pytest.mark.parametrize("bad, message", [
    ("not-a-list", "consumer_uuids: expected a list of at most 1000 uuids"),
    (["nope"], "consumer_uuids: 'nope' is not a UUID"),
])
def test_every_consumer_method_checks_the_uuids_at_the_edge(
        manager, method, bad, message):
    error = _raised(getattr(manager, method), {}, bad)
    assert type(error) is exception.InvalidRequest
    assert error.message == message


def _claim(engine, host, move=(), memory_mb=1024):
    row = node_row(engine, host)
    consume.claim(engine, [Claim(
        consumer_uuid=U[0], node_id=row.id, host=host,
        generation=row.generation, vcpus=1, memory_mb=memory_mb,
        disk_gb=10)], move=move, ttl=3600)


def _memory_used(engine):
    return {h: node_row(engine, h).memory_mb_used for h in ("h1", "h2")}


@pytest.mark.parametrize("method, said, used", [
    ("confirm_move", "Confirmed 1 move(s) of 2 consumer(s)",
     {"h1": 0, "h2": 2048}),
    ("revert_move", "Reverted 1 move(s) of 2 consumer(s)",
     {"h1": 1024, "h2": 0}),
])
def test_moves_end_through_the_manager_and_say_how_many(
        register, engine, manager, caplog, method, said, used):
    register(node("h1"), node("h2"))
    _claim(engine, "h1")
    _claim(engine, "h2", move=[U[0]], memory_mb=2048)
    assert _memory_used(engine) == {"h1": 1024, "h2": 2048}
    with caplog.at_level(logging.DEBUG, logger="scheduler.rpc.endpoint"):
        # As claims store them, whatever the spelling; U[1] moves nowhere.
        assert getattr(manager, method)({}, [U[0].upper(), U[1]]) == 1
    assert said in caplog.text
    assert _memory_used(engine) == used
    assert getattr(manager, method)({}, [U[0]]) == 0     # idempotent


def test_claims_are_provisional_and_confirm_counts(register, engine,
                                                   manager):
    register(node("h1", memory_mb=16384))
    manager.select_destinations({}, spec=_spec(U[:3]))
    expires = _expires(engine)
    assert set(expires) == set(U[:3])
    assert all(e is not None for e in expires.values())   # ttl 3600 s

    assert manager.confirm({}, [U[0], U[1], U[5]]) == 2
    expires = _expires(engine)
    assert expires[U[0]] is None and expires[U[1]] is None
    assert expires[U[2]] is not None
    # confirmed before still counts; nothing held counts 0
    assert manager.confirm({}, [U[0], U[2]]) == 2
    assert manager.confirm({}, [U[4], U[5]]) == 0
    assert manager.confirm({}, []) == 0
    assert all(e is None for e in _expires(engine).values())


def test_ttl_zero_makes_permanent_claims(register, conf, engine):
    conf.set_override("unconfirmed_claim_ttl", 0, group="scheduler")
    manager = SchedulerManager(conf, engine)
    register(node("h1", memory_mb=16384))
    manager.select_destinations({}, spec=_spec(U[:1]))
    assert _expires(engine) == {U[0]: None}
    _expire_now(engine)             # touches nothing
    manager.run_periodic_tasks()
    assert len(allocation_rows(engine)) == 1


def test_uuids_are_matched_as_claims_store_them(register, engine, manager):
    # select_destinations takes any spelling of a uuid and claims the
    # canonical one; confirm and release must find it by the same.
    register(node("h1", memory_mb=16384))
    spelled = U[0].upper().replace("-", "")
    manager.select_destinations({}, spec=_spec([spelled]))
    assert manager.confirm({}, [spelled]) == 1
    assert _expires(engine) == {U[0]: None}
    assert manager.release({}, [spelled]) == 1
    assert allocation_rows(engine) == []


def test_release_counts(register, engine, manager):
    register(node("h1", memory_mb=16384))
    manager.select_destinations({}, spec=_spec(U[:2]))
    assert manager.release({}, [U[0], U[5]]) == 1
    assert manager.release({}, [U[0]]) == 0
    assert [a.consumer_uuid for a in allocation_rows(engine)] == [U[1]]


def test_run_periodic_tasks_releases_expired_claims(register, engine,
                                                    manager):
    register(node("h1", memory_mb=16384))
    manager.select_destinations({}, spec=_spec(U[:4]))
    manager.confirm({}, [U[3]])            # confirmed: never expires
    _expire_now(engine, U[0], U[1])        # U[2]'s time has not come
    before = node_row(engine, "h1")
    assert before.memory_mb_used == 4096

    manager.run_periodic_tasks()
    assert sorted(a.consumer_uuid for a in allocation_rows(engine)) == [
        U[2], U[3]]
    row = node_row(engine, "h1")
    assert (row.memory_mb_used, row.vcpus_used, row.local_gb_used,
            row.running_vms) == (2048, 2, 20, 2)
    assert row.generation == before.generation + 1

    # nothing more to release
    manager.run_periodic_tasks()
    assert node_row(engine, "h1") == row


def test_run_periodic_tasks_runs_the_drivers_tasks(manager, monkeypatch):
    calls = []
    monkeypatch.setattr(manager.driver, "run_periodic_tasks",
                        lambda: calls.append(1))
    manager.run_periodic_tasks()
    assert calls == [1]


def test_released_room_is_used_again(register, engine, manager):
    register(node("h1", memory_mb=4096))
    manager.select_destinations({}, spec=_spec(U[:1], memory_mb=4096))
    error = _raised(manager.select_destinations, {},
                    spec=_spec(U[1:2], memory_mb=4096))
    assert type(error) is exception.NoValidHost
    _expire_now(engine, U[0])
    manager.run_periodic_tasks()
    [dest] = manager.select_destinations({},
                                         spec=_spec(U[1:2], memory_mb=4096))
    assert dest["host"] == "h1"


@pytest.mark.parametrize("bad", [None, 7, "not-a-uuid", "9" * 40])
def test_release_stack_validates_the_stack_id(manager, bad):
    e = _raised(manager.release_stack, {}, stack_id=bad)
    assert isinstance(e, exception.InvalidRequest)
    assert e.message.startswith("stack_id: expected a uuid")


HEX = U[0].replace("-", "")


@pytest.mark.parametrize("bad", [
    "{" + HEX + "}", "{" + U[0] + "}", "urn:" + HEX, U[0] + "\n",
    " " + U[0], 7, None])
def test_select_and_release_stack_refuse_a_stack_id_alike(
        register, engine, manager, bad):
    """One rule reads a stack id: release_stack took ``{hex}`` and
    ``urn:hex`` (as uuid.UUID does) that select_stack refused, and
    select_stack took a trailing newline release_stack refused."""
    register(node("h1"))
    stack = {"stack_id": bad, "resources": {"a": {"spec": _spec([U[1]])}}}
    selected = _raised(manager.select_stack, {}, stack=stack)
    released = _raised(manager.release_stack, {}, stack_id=bad)
    assert isinstance(selected, exception.InvalidRequest)
    assert isinstance(released, exception.InvalidRequest)
    assert released.message == (
        f"stack_id: expected a uuid (32 hex digits, dashes optional), "
        f"got {bad!r}")
    # One rule, one line (select_stack's named "stack.stack_id").
    assert selected.message == released.message
    assert allocation_rows(engine) == []


@pytest.mark.parametrize("written", [U[0].upper(), HEX, HEX.upper()])
def test_a_stack_id_select_stack_takes_release_stack_takes_too(
        register, engine, manager, written):
    register(node("h1"))
    stack = {"stack_id": written, "resources": {"a": {"spec": _spec([U[1]])}}}
    assert manager.select_stack({}, stack=stack)["stack_id"] == U[0]
    assert manager.release_stack({}, stack_id=written) == 1
    assert allocation_rows(engine) == []


def test_select_stack_validates_at_the_edge_and_claims_nothing(
        register, engine, manager):
    register(node("h1"))
    e = _raised(manager.select_stack, {}, stack={"stack_id": U[0]})
    assert isinstance(e, exception.InvalidRequest)
    assert e.message == "stack: 'resources' is a required property"
    assert allocation_rows(engine) == []


def test_stacks_are_placed_ranked_and_released_through_the_manager(
        register, engine, manager):
    register(node("h1"), node("h2"))
    stack = {"stack_id": U[0], "resources": {
        "a": {"spec": _spec([U[1]])},
        "b": {"spec": _spec([U[2]]), "different_host": ["a"]}}}
    ranked = manager.rank_stack({}, stack=stack)
    assert ranked["dry_run"] is True and allocation_rows(engine) == []
    placed = manager.select_stack({}, stack=stack)
    assert placed["order"] == [["a"], ["b"]]
    hosts = {n: d[0]["host"] for n, d in placed["resources"].items()}
    assert sorted(hosts.values()) == ["h1", "h2"]
    assert manager.release_stack({}, stack_id=U[0].upper()) == 2
    assert allocation_rows(engine) == []


def test_the_chooser_takes_its_place_among_the_servers(conf, engine,
                                                      caplog):
    manager = SchedulerManager(conf, engine, choice.Share(1, 2))
    before = manager.driver.chooser.share
    with caplog.at_level(logging.INFO, logger="scheduler.rpc.endpoint"):
        manager.take_place(1, 2)
    assert manager.driver.chooser.share == choice.Share(1, 2, 1, 2)
    assert before == choice.Share(1, 2)   # swapped, not changed in place
    assert "Scheduler server 2 of 2 up on topic" in caplog.text
    caplog.clear()
    now = manager.driver.chooser.share
    manager.take_place(1, 2)
    assert manager.driver.chooser.share is now   # unchanged: kept
    assert "Scheduler server" not in caplog.text


def _deep_spec(uuids):
    return {**_spec(uuids), "scheduler_hints": {"deep": nested(500)}}


@pytest.mark.parametrize("call, args, field", [
    ("select_destinations", lambda: {"spec": _deep_spec([U[1]])}, "spec"),
    ("rank_destinations", lambda: {"spec": _deep_spec([U[1]])}, "spec"),
    # nova 4.0's pair is read as a spec: the hint is named there.
    ("select_destinations", lambda: {
        "request_spec": {"instance_type": _spec([])["flavor"]},
        "filter_properties": {"scheduler_hints": {"deep": nested(500)}}},
     "spec"),
    ("select_stack", lambda: {"stack": {"stack_id": U[0], "resources": {
        "a": {"spec": _deep_spec([U[1]])}}}}, "resources.a.spec"),
    ("rank_stack", lambda: {"stack": {"stack_id": U[0], "resources": {
        "a": {"spec": _deep_spec([U[1]])}}}}, "resources.a.spec"),
], ids=["select_destinations", "rank_destinations", "legacy", "select_stack",
        "rank_stack"])
def test_a_hint_nested_too_deep_is_one_line_naming_it(
        register, engine, manager, caplog, call, args, field):
    """500 levels deep, select_stack and rank_stack raised a bare
    RecursionError (a 3,000-line traceback in the log per call), and
    select_destinations placed the request, which carried the hint into
    the planner unchecked."""
    register(node("h1"))
    caplog.set_level(logging.DEBUG)
    e = _raised(getattr(manager, call), {}, **args())
    assert isinstance(e, exception.InvalidRequest)
    assert e.message == (f"{field}.scheduler_hints.deep...: nested deeper "
                         f"than the 64 levels allowed")
    assert allocation_rows(engine) == []
    assert [r for r in caplog.records if r.exc_info] == []


def test_a_stack_id_nested_too_deep_is_refused_before_it_is_worded(
        manager):
    """release_stack's error repeats the id it was given: a repr as deep
    as the value."""
    e = _raised(manager.release_stack, {}, stack_id=[nested(500)])
    assert e.message == ("stack_id.0.k...: nested deeper than the 64 "
                         "levels allowed")


@pytest.mark.parametrize("kwargs, says", [
    ({}, "host: expected a host name of 1 to 255 characters, got None"),
    ({"host": ""}, "host: expected a host name"),
    ({"host": "h" * 256}, "host: expected a host name"),
    ({"host": "h1\x00"}, "host: 'h1\\x00' holds NUL"),
    ({"host": "h1\udcff"}, "is not UTF-8 text"),
    ({"host": "h1", "apply": "yes"}, "apply: expected true or false"),
    ({"host": "h1", "same_aggregate": 1},
     "same_aggregate: expected true or false"),
    ({"host": "nosuch"}, "host: no compute host 'nosuch'"),
])
def test_plan_drain_checks_its_arguments_at_the_edge(register, manager,
                                                     kwargs, says):
    register(node("h1"))
    e = _raised(manager.plan_drain, {}, **kwargs)
    assert isinstance(e, exception.InvalidRequest)
    assert says in e.message


@pytest.mark.parametrize("kwargs, says", [
    ({"without_hosts": "h1"}, "without_hosts: expected a list"),
    ({"without_hosts": [7]}, "without_hosts: expected a host name"),
    ({"without_hosts": ["nosuch"]}, "without_hosts: no compute host"),
    ({"without_hosts": ["h1"] * 102}, "without_hosts: at most 100 hosts"),
    ({"spec": spec_dict(num_instances=2)},
     "spec: capacity asks about one instance like it, not 2"),
    ({"spec": spec_dict(flavor={"memory_mb": 0, "vcpus": 0, "root_gb": 0,
                                "ephemeral_gb": 0, "swap": 0})},
     "any number of them fits"),
])
def test_capacity_checks_its_arguments_at_the_edge(register, manager,
                                                   kwargs, says):
    register(node("h1"))
    e = _raised(manager.capacity, {}, **{"spec": spec_dict(), **kwargs})
    assert isinstance(e, exception.InvalidRequest)
    assert says in e.message


def test_only_a_planning_driver_drains_or_counts(register, conf, engine):
    register(node("h1"))
    conf.set_override("driver", "chance_scheduler", "scheduler")
    manager = SchedulerManager(conf, engine)
    e = _raised(manager.plan_drain, {}, host="h1")
    assert e.message == ("plan_drain: driver 'chance_scheduler' does not "
                         "plan drains")
    e = _raised(manager.capacity, {}, spec=spec_dict())
    assert e.message.startswith("capacity: driver 'chance_scheduler'")


def test_same_aggregate_needs_a_host_in_an_aggregate(register, engine,
                                                     manager):
    register(node("h1"), node("h2"))
    [placed] = manager.select_destinations({}, spec=spec_dict(
        force_hosts=["h1"]))
    # The fleet's nodes are in their zone's aggregate: both leave it (to
    # the default zone, where a move off h1 stays).
    with engine.begin() as conn:
        conn.execute(models.aggregate_hosts.delete())
    e = _raised(manager.plan_drain, {}, host="h1", same_aggregate=True)
    assert e.message == "same_aggregate: host h1 is in no aggregate"
    assert manager.plan_drain({}, host="h1")["moves"][0]["consumer_uuid"] \
        == placed["uuid"]
