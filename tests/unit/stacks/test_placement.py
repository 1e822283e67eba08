"""select / rank / release of stacks on a real SQLite database: relations,
groups, zones and forcing hold across resources; all or nothing;
idempotent by stack id."""
import threading

import pytest

from scheduler.admin import aggregates
from scheduler.claims import lifecycle
from scheduler.db import allocations
from scheduler import exception
from scheduler.db import retry as db_retry
from scheduler.decide.filter import FilterScheduler
from scheduler.filters.compute import ComputeFilter
from scheduler.stacks import placement
from scheduler.stacks import store
from scheduler.stacks.ids import consumer_uuid
from scheduler.stacks.stack import Stack
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import make_spec
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node
from tests.unit.fakes import spec_dict
from tests.unit.conftest import fresh_host_manager

SID = "5a0b0c0d-0000-4000-8000-0000000000b1"
G = "eeeeeeee-0000-4000-8000-000000000001"
F = {"memory_mb": 1024, "vcpus": 1, "root_gb": 1}
#: A release run once, not retried.
NO_RETRY = db_retry.retrying(0)


def _stack(resources, stack_id=SID):
    return Stack.from_primitives({"stack_id": stack_id, "project_id": "p1",
                                  "resources": resources})


def _hosts(result):
    return {name: [d["host"] for d in dests]
            for name, dests in result["resources"].items()}


def _three_tier():
    return {
        "net": {"spec": None},
        "db": {"spec": spec_dict(flavor=F), "depends_on": ["net"]},
        "app": {"spec": spec_dict(flavor=F, num_instances=2),
                "same_host": ["db"]},
        "web": {"spec": spec_dict(flavor=F, num_instances=2),
                "different_host": ["app"]},
    }


@pytest.fixture
def four_hosts(register):
    register(*[node(f"h{i}", memory_mb=8192) for i in range(1, 5)])


def test_relations_hold_and_everything_is_claimed_once(four_hosts,
                                                       filter_driver,
                                                       engine):
    result = placement.select(filter_driver, _stack(_three_tier()))
    assert result["order"] == [["net"], ["db"], ["app"], ["web"]]
    hosts = _hosts(result)
    assert set(hosts) == {"db", "app", "web"}
    assert set(hosts["app"]) == set(hosts["db"])
    assert not set(hosts["web"]) & set(hosts["app"])
    rows = allocation_rows(engine)
    assert sorted(r.consumer_uuid for r in rows) == sorted(
        d["uuid"] for dests in result["resources"].values() for d in dests)
    assert result["resources"]["db"][0]["uuid"] == consumer_uuid(SID, "db",
                                                                 0)
    used = sum(node_row(engine, f"h{i}").memory_mb_used for i in range(1, 5))
    assert used == 5 * 1024


def test_a_re_sent_stack_returns_what_it_holds(four_hosts, filter_driver,
                                               engine):
    first = placement.select(filter_driver, _stack(_three_tier()))
    again = placement.select(filter_driver, _stack(_three_tier()))
    assert _hosts(again) == _hosts(first)
    assert len(allocation_rows(engine)) == 5


def test_a_changed_stack_under_the_same_id_is_refused_naming_the_change(
        four_hosts, filter_driver, engine):
    placement.select(filter_driver, _stack(_three_tier()))
    changed = _three_tier()
    changed["web"]["spec"] = spec_dict(flavor={**F, "vcpus": 2},
                                       num_instances=2)
    del changed["net"]
    changed["db"]["depends_on"] = []
    with pytest.raises(exception.InvalidRequest) as e:
        placement.select(filter_driver, _stack(changed))
    assert e.value.message == (
        f"stack_id: stack {SID} is already placed with another definition "
        f"(release it first): resources.db.depends_on: [\"net\"] -> []; "
        f"resources.net removed; resources.web.spec.flavor.vcpus: 1 -> 2")
    assert len(allocation_rows(engine)) == 5


def test_release_gives_everything_back_once(four_hosts, filter_driver,
                                            engine):
    placement.select(filter_driver, _stack(_three_tier()))
    assert placement.release(engine, SID, NO_RETRY) == 5
    assert placement.release(engine, SID, NO_RETRY) == 0
    assert allocation_rows(engine) == []
    assert all(node_row(engine, f"h{i}").memory_mb_used == 0
               for i in range(1, 5))
    # Released, the id is free for another stack.
    other = {"solo": {"spec": spec_dict(flavor=F)}}
    placement.select(filter_driver, _stack(other))
    assert len(allocation_rows(engine)) == 1


def test_release_gives_back_what_the_stacks_consumers_hold_whoever_claimed(
        four_hosts, filter_driver, engine):
    """Pins store.release's contract: a stack's claims are those its
    consumer uuids hold. A stack's server shelved (claim released) then
    unshelved (claimed again by select_destinations, nova's way) is still
    the stack's server; the schema records no more than the uuid, so it
    cannot tell that claim from another request's that took the uuid."""
    placement.select(filter_driver, _stack(
        {"db": {"spec": spec_dict(flavor=F, instance_uuids=[X])}}))
    lifecycle.release(engine, [X])
    filter_driver.select_destinations(make_spec(flavor=F,
                                                instance_uuids=[X]))
    assert placement.release(engine, SID, NO_RETRY) == 1
    assert allocation_rows(engine) == []


def test_a_stack_that_lost_some_claims_is_placed_again(four_hosts,
                                                       filter_driver,
                                                       engine):
    first = placement.select(filter_driver, _stack(_three_tier()))
    lifecycle.release(engine, [first["resources"]["web"][0]["uuid"]])
    again = placement.select(filter_driver, _stack(_three_tier()))
    assert len(allocation_rows(engine)) == 5
    hosts = _hosts(again)
    assert not set(hosts["web"]) & set(hosts["app"])
    used = sum(node_row(engine, f"h{i}").memory_mb_used for i in range(1, 5))
    assert used == 5 * 1024


def test_a_full_stack_that_lost_a_claim_fits_again(register,
                                                   filter_driver, engine):
    """The claims left of a stack are room for its new placement: planned
    again on two full hosts, it counts them once."""
    register(node("h1", memory_mb=2048), node("h2", memory_mb=2048))
    stack = {"x": {"spec": spec_dict(flavor=F, num_instances=4)}}
    first = placement.select(filter_driver, _stack(stack))
    lifecycle.release(engine, [first["resources"]["x"][3]["uuid"]])
    again = placement.select(filter_driver, _stack(stack))
    assert sorted(_hosts(again)["x"]) == ["h1", "h1", "h2", "h2"]
    assert len(allocation_rows(engine)) == 4
    assert [node_row(engine, h).memory_mb_used for h in ("h1", "h2")] == [
        2048, 2048]


def test_a_refusal_claims_nothing(four_hosts, filter_driver, engine):
    resources = _three_tier()
    resources["big"] = {"spec": spec_dict(flavor={**F, "memory_mb": 99999})}
    with pytest.raises(exception.NoValidHost,
                       match="No valid host for resource 'big'"):
        placement.select(filter_driver, _stack(resources))
    assert allocation_rows(engine) == []
    assert all(node_row(engine, f"h{i}").generation == 0
               for i in range(1, 5))
    # Nor is the stack recorded: the id is still free.
    placement.select(filter_driver, _stack(_three_tier()))


def test_the_dry_run_claims_nothing(four_hosts, filter_driver, engine):
    result = placement.select(filter_driver, _stack(_three_tier()),
                              dry_run=True)
    assert result["dry_run"] is True
    assert set(_hosts(result)) == {"db", "app", "web"}
    assert allocation_rows(engine) == []
    placement.select(filter_driver, _stack(_three_tier()))


def test_a_hard_group_spans_resources_and_earlier_members(
        register, filter_driver, engine):
    register(*[node(f"h{i}", memory_mb=8192) for i in range(1, 5)])
    group = {"uuid": G, "policies": ["anti-affinity"]}
    # A member placed before the stack, by a single request.
    filter_driver.select_destinations(make_spec(flavor=F,
                                                instance_group=group))
    resources = {f"db{i}": {"spec": spec_dict(flavor=F,
                                              instance_group=group)}
                 for i in range(3)}
    hosts = _hosts(placement.select(filter_driver, _stack(resources)))
    members = [h for dests in hosts.values() for h in dests]
    assert len(set(members)) == 3
    assert {r.group_uuid for r in allocation_rows(engine)} == {G}
    held = allocations.group_hosts
    with filter_driver.engine.connect() as conn:
        assert sorted(held(conn, G).values()) == [1, 1, 1, 1]
    # A fourth resource of the group in another stack finds no host left.
    more = {"db9": {"spec": spec_dict(flavor=F, instance_group=group)},
            "other": {"spec": spec_dict(flavor=F)}}
    with pytest.raises(exception.NoValidHost,
                       match="ServerGroupAntiAffinityFilter removed 4"):
        placement.select(filter_driver, _stack(
            more, "5a0b0c0d-0000-4000-8000-0000000000b2"))


def test_a_soft_group_spans_resources(register, filter_driver):
    register(*[node(f"h{i}", memory_mb=8192) for i in range(1, 5)])
    group = {"uuid": G, "policies": ["soft-affinity"]}
    resources = {f"w{i}": {"spec": spec_dict(flavor=F,
                                             instance_group=group)}
                 for i in range(3)}
    hosts = _hosts(placement.select(filter_driver, _stack(resources)))
    assert len({h for dests in hosts.values() for h in dests}) == 1


def test_zones_and_forcing_hold_per_resource(register, filter_driver):
    register(node("a1", zone="az1"), node("a2", zone="az1"),
             node("b1", zone="az2"), node("b2", zone="az2"))
    resources = {
        "east": {"spec": spec_dict(flavor=F, availability_zone="az2",
                                   num_instances=2)},
        "pinned": {"spec": spec_dict(flavor=F, force_hosts=["a2"]),
                   "different_host": ["west"]},
        "west": {"spec": spec_dict(flavor=F, availability_zone="az1")},
    }
    hosts = _hosts(placement.select(filter_driver, _stack(resources)))
    assert set(hosts["east"]) <= {"b1", "b2"}
    assert hosts["pinned"] == ["a2"]
    assert hosts["west"] == ["a1"]


def test_a_driver_without_shared_views_does_not_place_stacks(
        four_hosts, conf, engine):
    from scheduler.decide.chance import ChanceScheduler
    from tests.unit.conftest import fresh_host_manager
    driver = ChanceScheduler(conf, fresh_host_manager(conf, engine), engine)
    with pytest.raises(exception.InvalidRequest,
                       match="does not place stacks"):
        placement.select(driver, _stack(_three_tier()))


def test_a_concurrent_send_of_the_same_stack_gets_what_the_first_claimed(
        four_hosts, filter_driver, engine, monkeypatch):
    first = placement.select(filter_driver, _stack(_three_tier()))
    # The second send read the stacks table before the first committed:
    # its insert of the stack's row fails, and it looks again.
    real = store.definition
    reads = []

    def stale_then_real(engine, stack_id):
        reads.append(stack_id)
        return None if len(reads) == 1 else real(engine, stack_id)
    monkeypatch.setattr(store, "definition", stale_then_real)
    held = allocations.stack_placements
    monkeypatch.setattr(
        allocations, "stack_placements", lambda engine, stack_id, uuids: {}
        if len(reads) == 1 else held(engine, stack_id, uuids))
    again = placement.select(filter_driver, _stack(_three_tier()))
    # Read again once its own claim failed (or found no room left).
    assert len(reads) > 1
    assert _hosts(again) == _hosts(first)
    assert len(allocation_rows(engine)) == 5



def test_an_error_after_the_assume_does_not_hold_later_stacks(
        register, filter_driver, engine, monkeypatch):
    """Stack a fails once its usage is assumed on h1 and before its claim
    (here: telling the chooser). What it assumed must be settled and
    forgotten all the same: stack b, planned on h1 next, claims at once
    instead of waiting for a claim that will never be over."""
    register(node("h1", memory_mb=8192))
    real_claiming = filter_driver.chooser.claiming
    failed = []

    def claiming_fails_once(planned):
        if not failed:
            failed.append(planned)
            raise RuntimeError("fails after the assume")
        real_claiming(planned)

    monkeypatch.setattr(filter_driver.chooser, "claiming",
                        claiming_fails_once)
    one = {"db": {"spec": spec_dict(flavor=F)}}
    with pytest.raises(RuntimeError, match="after the assume"):
        placement.select(filter_driver, _stack(one))
    results = []
    b = threading.Thread(target=lambda: results.append(placement.select(
        filter_driver, _stack(one, stack_id=SID[:-1] + "2"))), daemon=True)
    b.start()
    b.join(10)
    assert not b.is_alive(), "b still waits for a's claim after 10 s"
    assert [_hosts(r) for r in results] == [{"db": ["h1"]}]
    assert node_row(engine, "h1").memory_mb_used == 1024
    assert filter_driver.chooser._claiming == {}


def _driver_without_ram_filter(conf, engine):
    """A filter driver whose planner does not look at RAM (the claim
    always does): ComputeFilter alone, injected, as a plugin test injects
    filters (a configured set always checks capacity)."""
    driver = FilterScheduler(conf, fresh_host_manager(conf, engine), engine)
    driver.filters = [ComputeFilter(conf)]
    return driver


def test_a_no_room_that_is_not_a_race_replans_the_stack_without_that_node(
        register, engine, conf, caplog):
    # A planner that does not look at RAM and prefers the fuller host: the
    # claim, which always checks capacity, refuses h1. As for one request,
    # that is a planner/claim disagreement, not a lost race.
    conf.set_override("ram_weight_multiplier", -1.0, "filter_scheduler")
    driver = _driver_without_ram_filter(conf, engine)
    register(node("h1", memory_mb=4096), node("h2", memory_mb=8192))
    set_node(engine, "h1", memory_mb_used=4096)
    result = placement.select(driver, _stack(
        {"db": {"spec": spec_dict(flavor={**F, "memory_mb": 2048})}}))
    assert _hosts(result) == {"db": ["h2"]}
    assert "Planner and claim disagree (not a race)" in caplog.text
    assert "lost the claim race" not in caplog.text


def test_a_repeated_no_room_in_a_stack_says_what_disagreed(
        register, engine, conf):
    driver = _driver_without_ram_filter(conf, engine)
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    set_node(engine, "h1", memory_mb_used=4096)
    set_node(engine, "h2", memory_mb_used=4096)
    with pytest.raises(exception.NoValidHost) as e:
        placement.select(driver, _stack(
            {"db": {"spec": spec_dict(flavor={**F, "memory_mb": 2048})}}))
    message = str(e.value)
    assert "race" not in message.replace("not a race", "")
    assert "the planner and the claim disagreed on capacity" in message
    assert allocation_rows(engine) == []


def test_a_stack_refused_after_leaving_out_a_disagreeing_node_says_so(
        register, engine, conf):
    # The only host is full, the planner does not look at RAM: after the
    # claim refuses h1 the re-plan has no host, and that is not "no
    # compute node is registered".
    driver = _driver_without_ram_filter(conf, engine)
    register(node("h1", memory_mb=4096))
    set_node(engine, "h1", memory_mb_used=4096)
    with pytest.raises(exception.NoValidHost) as e:
        placement.select(driver, _stack(
            {"db": {"spec": spec_dict(flavor={**F, "memory_mb": 2048})}}))
    message = str(e.value)
    assert "registered" not in message
    assert message.startswith(
        f"No valid host for stack {SID}: the planner and the claim "
        f"disagreed on capacity (a bug, not a race), and no other host is "
        f"left: compute node ")
    assert "(h1, generation 0): memory_mb: claim saw 4096" in message
    assert allocation_rows(engine) == []


def test_a_stack_with_nothing_to_place_places_nothing(register,
                                                      filter_driver):
    register(node("h1"))
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "net": {"spec": None},
        "port": {"spec": None, "depends_on": ["net"]}}})
    for _ in range(2):          # the second is the same stack again
        assert placement.select(filter_driver, stack)["resources"] == {}
    assert allocation_rows(filter_driver.engine) == []
    assert placement.release(filter_driver.engine, SID, NO_RETRY) == 0


@pytest.mark.parametrize("field", ["project_id", "user_id"])
def test_a_project_or_user_utf8_cannot_carry_is_refused_claiming_nothing(
        four_hosts, filter_driver, engine, field):
    # What json.loads makes of "p\ud800": storing the stack's row failed
    # with oslo.db's DBInvalidUnicodeParameter, a traceback to the caller.
    with pytest.raises(exception.InvalidRequest,
                       match=rf"^{field}: 'p\\ud800' is not valid "
                             r"unicode"):
        placement.select(filter_driver, Stack.from_primitives(
            {"stack_id": SID, field: "p\ud800",
             "resources": _three_tier()}))
    assert allocation_rows(engine) == []


def test_a_forced_resource_that_breaks_a_hard_group_is_refused_at_once(
        four_hosts, filter_driver, engine):
    """Forcing skips the group filters, the claim keeps the group: a
    refusal naming the forced resource, not "lost the claim race"."""
    group = {"uuid": G, "policies": ["anti-affinity"]}
    resources = {
        "a": {"spec": spec_dict(flavor=F, instance_group=group,
                                force_hosts=["h1"])},
        "b": {"spec": spec_dict(flavor=F, instance_group=group,
                                force_hosts=["h1"])},
    }
    with pytest.raises(exception.NoValidHost) as info:
        placement.select(filter_driver, _stack(resources))
    message = info.value.message
    assert "lost the claim race" not in message
    assert message.startswith(
        f"No valid host for stack {SID}: a forced host would break its "
        f"server group: server group {G}:")
    assert allocation_rows(engine) == []


OTHER = "5a0b0c0d-0000-4000-8000-0000000000b2"
X = "1a2b3c4d-0000-4000-8000-00000000000a"


def test_a_stack_naming_another_stacks_consumer_is_refused(
        four_hosts, filter_driver, engine):
    """Stack B naming an instance of stack A took A's claim over (and
    releasing A released B's): refused, naming the consumer and A."""
    first = placement.select(filter_driver, _stack(
        {"db": {"spec": spec_dict(flavor=F, instance_uuids=[X])}}))
    bigger = {"app": {"spec": spec_dict(flavor={**F, "memory_mb": 2048},
                                        instance_uuids=[X])}}
    for dry_run in (True, False):
        with pytest.raises(exception.InvalidRequest) as e:
            placement.select(filter_driver, _stack(bigger, OTHER),
                             dry_run=dry_run)
        assert e.value.message == (
            f"resources.app.spec.instance_uuids: {X} is an instance "
            f"of stack {SID} (release it first)")
    # A's claim is intact, B holds nothing.
    rows = allocation_rows(engine)
    assert [(r.consumer_uuid, r.memory_mb) for r in rows] == [(X, 1024)]
    assert store.definition(engine, OTHER) is None
    again = placement.select(filter_driver, _stack(
        {"db": {"spec": spec_dict(flavor=F, instance_uuids=[X])}}))
    assert _hosts(again) == _hosts(first)
    assert placement.release(engine, OTHER, NO_RETRY) == 0
    assert placement.release(engine, SID, NO_RETRY) == 1


def test_a_stack_naming_a_consumer_another_stack_lost_is_refused(
        four_hosts, filter_driver, engine):
    """A stack's consumer released alone is still the stack's (a re-send
    places it again): another stack naming it would share it."""
    placement.select(filter_driver, _stack(
        {"db": {"spec": spec_dict(flavor=F, instance_uuids=[X])}}))
    lifecycle.release(engine, [X])
    with pytest.raises(exception.InvalidRequest,
                       match=f"{X} is an instance of stack {SID}"):
        placement.select(filter_driver, _stack(
            {"app": {"spec": spec_dict(flavor=F, instance_uuids=[X])}},
            OTHER))
    assert allocation_rows(engine) == []


def test_a_stack_naming_a_consumer_claimed_alone_is_refused(
        four_hosts, filter_driver, engine):
    """An instance placed by select_destinations is not the stack's to
    move: its claim stays where it is."""
    filter_driver.select_destinations(make_spec(flavor=F,
                                                instance_uuids=[X]))
    before = [(r.consumer_uuid, r.compute_node_id)
              for r in allocation_rows(engine)]
    with pytest.raises(exception.InvalidRequest) as e:
        placement.select(filter_driver, _stack(
            {"app": {"spec": spec_dict(flavor={**F, "memory_mb": 2048},
                                       instance_uuids=[X])}}))
    assert e.value.message == (
        f"resources.app.spec.instance_uuids: {X} already holds a "
        f"claim this stack did not make (release it first)")
    assert [(r.consumer_uuid, r.compute_node_id)
            for r in allocation_rows(engine)] == before
    assert store.definition(engine, SID) is None


def test_a_different_host_hint_on_an_instance_of_the_stack_is_refused(
        register, engine, conf):
    """The hint resolves its instances from the claims, and the stack's own
    are not claimed while it is planned: both servers were claimed on the
    one host, the hint broken. The relation between resources says it."""
    conf.set_override("enabled_filters", ["ComputeFilter", "RamFilter",
                                          "DifferentHostFilter"],
                      "filter_scheduler")
    driver = FilterScheduler(conf, fresh_host_manager(conf, engine), engine)
    register(node("h1"))
    with pytest.raises(exception.InvalidRequest,
                       match=r"^resources.web2.spec.scheduler_hints."
                             r"different_host: .* is an instance of "
                             r"resource 'web1' of this stack"):
        placement.select(driver, _stack({
            "web1": {"spec": spec_dict(flavor=F, instance_uuids=[X])},
            "web2": {"spec": spec_dict(
                flavor=F, scheduler_hints={"different_host": [X]})}}))
    assert allocation_rows(engine) == []


def test_a_reload_while_a_stack_is_planned_does_not_mix_filter_sets(
        register, engine, filter_driver, conf, monkeypatch):
    """SIGHUP swaps the filters for the next request: a stack planned
    meanwhile keeps the set it started with for every resource (here the
    RamFilter, where the new set's AggregateRamFilter would plan "b" on the
    small host, under its aggregate's ratio)."""
    register(node("h1", memory_mb=8192), node("h2", memory_mb=1024))
    set_node(engine, "h2", memory_mb_used=512)
    aggregates.create_aggregate(engine, "overcommit")
    aggregates.add_aggregate_host(engine, "overcommit", "h2")
    aggregates.set_aggregate_metadata(engine, "overcommit",
                                      {"ram_allocation_ratio": "4.0"})
    real = filter_driver.plan_on
    calls = []

    def reload_after_the_first(*args, **kwargs):
        selections = real(*args, **kwargs)
        calls.append(selections)
        if len(calls) == 1:
            conf.set_override("enabled_filters",
                              ["ComputeFilter", "AggregateRamFilter"],
                              "filter_scheduler")
            filter_driver.reload()
        return selections
    monkeypatch.setattr(filter_driver, "plan_on", reload_after_the_first)
    resources = {"a": {"spec": spec_dict(flavor=F)},
                 "b": {"spec": spec_dict(flavor=F),
                       "different_host": ["a"]}}
    with pytest.raises(exception.NoValidHost, match="RamFilter"):
        placement.select(filter_driver, _stack(resources), dry_run=True)
    assert calls
    # The next stack runs with the new set.
    assert sorted(h for hosts in _hosts(placement.select(
        filter_driver, _stack(resources), dry_run=True)).values()
        for h in hosts) == ["h1", "h2"]


def test_a_concurrent_send_of_a_stack_naming_its_consumers_is_not_refused(
        four_hosts, filter_driver, engine, monkeypatch):
    """The second send read no stack row, then the claims the first
    committed with it: they are its own, not another's to refuse."""
    resources = {"db": {"spec": spec_dict(flavor=F, instance_uuids=[X])}}
    first = placement.select(filter_driver, _stack(resources))
    real = store.definition
    reads = []

    def stale_then_real(engine, stack_id):
        reads.append(stack_id)
        return None if len(reads) == 1 else real(engine, stack_id)
    monkeypatch.setattr(store, "definition", stale_then_real)
    again = placement.select(filter_driver, _stack(resources))
    assert _hosts(again) == _hosts(first)
    assert [r.consumer_uuid for r in allocation_rows(engine)] == [X]


def test_a_send_that_lost_to_its_duplicate_gets_the_stack_without_retries(
        four_hosts, conf, engine, monkeypatch):
    """With [scheduler] claim_retries = 0 the send that finds the stack
    claimed under it by its duplicate (rpcapi re-sends a stack on a
    timeout) answers what the stack holds, as a single request does; it
    was refused: "its consumers were claimed concurrently 1 times"."""
    conf.set_override("claim_retries", 0, group="scheduler")
    driver = FilterScheduler(conf, fresh_host_manager(conf, engine), engine)
    other = FilterScheduler(conf, fresh_host_manager(conf, engine), engine)
    real_plan = placement.planner.plan
    first = []

    def duplicate_claims_meanwhile(driver_planning, *args, **kwargs):
        # This send read no stack and planned; its duplicate, in another
        # scheduler, commits the whole stack before this one claims.
        if driver_planning is driver and not first:
            first.append(placement.select(other, _stack(_three_tier())))
        return real_plan(driver_planning, *args, **kwargs)
    monkeypatch.setattr(placement.planner, "plan",
                        duplicate_claims_meanwhile)
    again = placement.select(driver, _stack(_three_tier()))
    assert _hosts(again) == _hosts(first[0])
    assert len(allocation_rows(engine)) == 5
