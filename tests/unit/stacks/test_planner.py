"""Placement quality: a stack is placed whenever an order exists that fits
it, not only when Heat's creation order happens to."""
import pytest

from scheduler.admin import aggregates
from scheduler import exception
from scheduler.decide.filter import FilterScheduler
from scheduler.stacks import placement
from scheduler.stacks import planner
from scheduler.stacks.stack import Stack
from tests.unit.fakes import node
from tests.unit.conftest import fresh_host_manager
from tests.unit.fakes import spec_dict

SID = "5a0b0c0d-0000-4000-8000-0000000000a1"


def _flavor(memory_mb):
    return {"memory_mb": memory_mb, "vcpus": 1, "root_gb": 1}


def _apart(names, **specs):
    """Resources ``names``, each different_host from every earlier one
    (how a template spells pairwise anti-affinity)."""
    return {name: {"spec": specs.get(name) or spec_dict(
                       flavor=_flavor(2048)),
                   "different_host": list(names[:i])}
            for i, name in enumerate(names)}


def _hosts(result):
    return {name: [d["host"] for d in dests]
            for name, dests in result["resources"].items()}


@pytest.mark.parametrize("n", [2, 6, 12])
def test_n_identical_servers_apart_on_exactly_n_free_hosts(
        register, filter_driver, n):
    # n hosts with room for the flavor, and as many too small for it.
    register(*[node(f"free{i:02d}", memory_mb=4096) for i in range(n)],
             *[node(f"tiny{i:02d}", memory_mb=1024) for i in range(n)])
    names = [f"s{i:02d}" for i in range(n)]
    result = placement.select(filter_driver, Stack.from_primitives(
        {"stack_id": SID, "resources": _apart(names)}))
    hosts = [h for dests in _hosts(result).values() for h in dests]
    assert sorted(hosts) == [f"free{i:02d}" for i in range(n)]


def _corner(register):
    # The RAM weigher sends a small server to "big" first, the only host
    # the database fits on.
    register(node("big", memory_mb=16384), node("h1", memory_mb=4096),
             node("h2", memory_mb=4096), node("h3", memory_mb=4096))
    names = ["app0", "app1", "app2", "db"]
    return Stack.from_primitives({"stack_id": SID, "resources": _apart(
        names, db=spec_dict(flavor=_flavor(12288)))})


def test_creation_order_alone_would_paint_itself_into_a_corner(
        register, filter_driver):
    stack = _corner(register)
    specs = {n: r.spec for n, r in stack.placed.items()}
    creation = [n for batch in stack.order for n in batch]
    assert creation[-1] == "db"
    with pytest.raises(planner.Stuck) as stuck:
        planner._plan_in_order(filter_driver, *planner._pairs(stack),
                               filter_driver.host_table(), specs, creation,
                               spread=1, pipeline=filter_driver.pipeline)
    assert stuck.value.name == "db"


def test_the_hardest_resource_is_planned_first(register, filter_driver):
    stack = _corner(register)
    hosts = _hosts(placement.select(filter_driver, stack))
    assert hosts["db"] == ["big"]
    assert sorted(hosts[n][0] for n in ("app0", "app1", "app2")) == [
        "h1", "h2", "h3"]


def test_a_resource_left_without_host_is_planned_first_next_time(
        register, filter_driver):
    # a, b and c must be on three different hosts; each may use two of
    # them. Tied on hardness, a and b take h1 and h2 (most free RAM
    # first), leaving c (h1 or h2) nothing; planned first, c makes room.
    register(node("h1", memory_mb=32768), node("h2", memory_mb=16384),
             node("h3", memory_mb=8192))
    f = _flavor(2048)
    resources = _apart(["a", "b", "c"],
                       a=spec_dict(flavor=f, ignore_hosts=["h2"]),
                       b=spec_dict(flavor=f, ignore_hosts=["h1"]),
                       c=spec_dict(flavor=f, ignore_hosts=["h3"]))
    stack = Stack.from_primitives({"stack_id": SID, "resources": resources})
    plan = planner.plan(filter_driver, stack, filter_driver.host_table(),
                        {n: r.spec for n, r in stack.placed.items()})
    assert plan.planned_in[0] == "c"
    hosts = {n: s[0].host.host for n, s in plan.selections.items()}
    assert hosts == {"c": "h1", "a": "h3", "b": "h2"}


def test_a_resource_that_fits_nowhere_is_named_with_the_filters(
        register, filter_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "web": {"spec": spec_dict(flavor=_flavor(1024))},
        "db": {"spec": spec_dict(flavor=_flavor(65536))}}})
    with pytest.raises(exception.NoValidHost) as e:
        placement.select(filter_driver, stack)
    assert e.value.message == (
        f"No valid host for resource 'db' of stack {SID}; nothing of the "
        f"stack was claimed: 0/2 hosts passed. RamFilter removed 2 "
        f"(insufficient RAM: need 65536 MB)")


def test_a_broken_relation_is_explained_as_a_step(register, filter_driver):
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    names = ["a", "b", "c"]
    stack = Stack.from_primitives({"stack_id": SID,
                                   "resources": _apart(names)})
    with pytest.raises(exception.NoValidHost) as e:
        placement.select(filter_driver, stack)
    assert "stack different_host removed 2 (holds an instance of" in \
        e.value.message


def _cores_or_ram(register):
    # "roomy" weighs best (RAM, disk) but has one vCPU; "cores" has room
    # for three servers.
    register(node("roomy", memory_mb=16384, vcpus=1, local_gb=200),
             node("cores", memory_mb=4096, vcpus=8, local_gb=100))


def test_a_same_host_set_goes_where_all_of_it_fits(register, filter_driver):
    _cores_or_ram(register)
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "app": {"spec": spec_dict(flavor=_flavor(1024), num_instances=2),
                "same_host": ["db"]},
        "db": {"spec": spec_dict(flavor=_flavor(1024))}}})
    result = placement.select(filter_driver, stack)
    assert _hosts(result) == {"app": ["cores", "cores"], "db": ["cores"]}


def test_a_same_host_set_that_fits_nowhere_says_so(register, filter_driver):
    _cores_or_ram(register)
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "app": {"spec": spec_dict(flavor=_flavor(2048), num_instances=2),
                "same_host": ["db"]},
        "db": {"spec": spec_dict(flavor=_flavor(1024))}}})
    with pytest.raises(exception.NoValidHost) as e:
        placement.select(filter_driver, stack)
    assert "stack one host removed 2 (no room for all of app, db)" in \
        e.value.message


AFFINITY = {"uuid": "eeeeeeee-0000-4000-8000-000000000001",
            "policies": ["affinity"]}


def test_an_affinity_group_across_resources_goes_where_all_of_it_fits(
        register, filter_driver):
    _cores_or_ram(register)
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "app": {"spec": spec_dict(flavor=_flavor(1024),
                                  instance_group=AFFINITY)},
        "db": {"spec": spec_dict(flavor=_flavor(1024),
                                 instance_group=AFFINITY)}}})
    result = placement.select(filter_driver, stack)
    assert _hosts(result) == {"app": ["cores"], "db": ["cores"]}


def test_the_instances_of_an_affinity_resource_go_where_all_fit(
        register, filter_driver):
    _cores_or_ram(register)
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "app": {"spec": spec_dict(flavor=_flavor(1024), num_instances=2,
                                  instance_group=AFFINITY)}}})
    result = placement.select(filter_driver, stack)
    assert _hosts(result) == {"app": ["cores", "cores"]}


def test_a_same_host_set_fits_under_the_ratio_its_filters_enforce(
        register, conf, engine):
    """Room for the whole set is judged by the ratio the enabled filters
    hold a host to: under AggregateCoreFilter, its aggregate's."""
    register(node("roomy", memory_mb=16384, vcpus=1, local_gb=200),
             node("cores", memory_mb=4096, vcpus=2, local_gb=100))
    aggregates.create_aggregate(engine, "dense")
    aggregates.add_aggregate_host(engine, "dense", "cores")
    aggregates.set_aggregate_metadata(engine, "dense",
                                      {"cpu_allocation_ratio": "2.0"})
    conf.set_override("enabled_filters", [
        "ComputeFilter", "RamFilter", "AggregateCoreFilter", "DiskFilter"],
        group="filter_scheduler")
    driver = FilterScheduler(conf, fresh_host_manager(conf, engine), engine)
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "app": {"spec": spec_dict(flavor=_flavor(1024), num_instances=2),
                "same_host": ["db"]},
        "db": {"spec": spec_dict(flavor=_flavor(1024))}}})
    result = placement.select(driver, stack)
    assert _hosts(result) == {"app": ["cores", "cores"], "db": ["cores"]}


def test_a_group_that_fits_in_part_says_how_many_found_hosts(
        register, filter_driver):
    # "of the hosts left after placing the first 1, 0/1 hosts passed"
    # read as nothing placed twice over, the hosts counted twice.
    register(node("h1", memory_mb=4096), node("h2", memory_mb=4096))
    stack = Stack.from_primitives({"stack_id": SID, "resources": {
        "web": {"spec": spec_dict(flavor=_flavor(4096),
                                  num_instances=2)},
        "db": {"spec": spec_dict(flavor=_flavor(4096))}}})
    with pytest.raises(exception.NoValidHost) as e:
        placement.select(filter_driver, stack)
    assert e.value.message == (
        f"No valid host for instance 2 of 2 of resource 'web' of stack "
        f"{SID} (planned after db); nothing of the stack was claimed: "
        f"with a host found for the first, 0/1 remaining hosts passed. "
        f"RamFilter removed 1 (insufficient RAM: need 4096 MB)")
