"""JsonFilter: the query hint, its operators, and malformed queries."""
import json

import oslo_messaging as messaging
import pytest

from scheduler import exception
from scheduler.decide import plugins
from scheduler.decide.filter import FilterScheduler
from scheduler.filters.base import filter_hosts
from scheduler.filters.json_filter import JsonFilter
from scheduler.filters.json_filter import compile_query
from scheduler.hosts.manager import HostManager
from scheduler.rpc.endpoint import SchedulerManager
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec
from tests.unit.fakes import node


def _spec(query):
    return make_spec(scheduler_hints={"query": query})


def _passes(conf, query, encode=True, **host):
    q = json.dumps(query) if encode else query
    return JsonFilter(conf).host_passes(make_host(**host), _spec(q))


HOST = {"memory_mb_total": 4096, "memory_mb_used": 1024, "vcpus_total": 8,
        "hypervisor_type": "QEMU", "stats": {"gpus": 2, "tier": "gold"},
        "cpu_info": {"arch": "x86_64"}, "disk_gb_total": 100,
        "disk_gb_used": 40}


@pytest.mark.parametrize("query", [None, "", [], "[]"])
def test_no_query_passes_every_host(conf, query):
    f = JsonFilter(conf)
    spec = _spec(query)
    assert f.host_passes(make_host(), spec)
    assert f.filter_all([make_host()], spec) == [make_host()]
    assert f.host_passes(make_host(), make_spec())


@pytest.mark.parametrize("query,passes", [
    (["=", "$hypervisor_type", "QEMU"], True),
    (["=", "$hypervisor_type", "Xen"], False),
    (["=", "$vcpus_total", 8, 8.0], True),
    (["=", "$vcpus_total", 8, 7], False),
    (["<", "$vcpus_total", 9], True),
    (["<", "$vcpus_total", 8], False),
    ([">", "$vcpus_total", 7], True),
    ([">", "$vcpus_total", 8], False),
    (["<=", "$vcpus_total", 8], True),
    (["<=", "$vcpus_total", 7], False),
    ([">=", "$free_ram_mb", 3072], True),
    ([">=", "$free_ram_mb", 3073], False),
    (["in", "$hypervisor_type", "KVM", "QEMU"], True),
    (["in", "$hypervisor_type", "KVM", "Xen"], False),
    (["not", ["=", "$vcpus_total", 8]], False),
    (["not", ["=", "$vcpus_total", 4]], True),
    (["or", ["=", "$vcpus_total", 4], ["=", "$vcpus_total", 8]], True),
    (["or", ["=", "$vcpus_total", 4], ["=", "$vcpus_total", 2]], False),
    (["and", [">=", "$free_ram_mb", 1024], ["=", "$vcpus_total", 8]], True),
    (["and", [">=", "$free_ram_mb", 1024], ["=", "$vcpus_total", 2]], False),
])
def test_operators(conf, query, passes):
    assert _passes(conf, query, **HOST) is passes


def test_dict_attributes_and_stats(conf):
    assert _passes(conf, ["=", "$stats.gpus", 2], **HOST)
    assert _passes(conf, ["=", "$stats.tier", "gold"], **HOST)
    assert not _passes(conf, [">", "$stats.gpus", 2], **HOST)
    assert _passes(conf, ["=", "$cpu_info.arch", "x86_64"], **HOST)


def test_novas_attribute_names(conf):
    assert _passes(conf, ["=", "$total_usable_ram_mb", 4096], **HOST)
    assert _passes(conf, [">=", "$free_disk_mb", 60 * 1024], **HOST)
    assert not _passes(conf, [">", "$free_disk_mb", 60 * 1024], **HOST)


def test_unresolved_arguments_are_dropped(conf):
    # too few arguments left -> false
    assert not _passes(conf, [">=", "$nope", 1], **HOST)
    assert not _passes(conf, ["=", "$stats.nope", 1], **HOST)
    assert not _passes(conf, ["=", "$cpu_info.arch.x", "y"], **HOST)
    # dropped in the middle: the others still compare
    assert _passes(conf, ["=", "$vcpus_total", "$nope", 8], **HOST)
    assert _passes(conf, ["=", "$vcpus_total", None, "", 8], **HOST)


def test_not_of_several_arguments_means_any(conf):
    assert _passes(conf, ["not", True, False])
    assert not _passes(conf, ["not", True, True])


def test_not_inside_and_or_counts_as_a_boolean(conf):
    # nova treated the list from "not" as true whatever it held
    assert not _passes(conf, ["and", ["not", ["=", "$vcpus_total", 8]]],
                       **HOST)
    assert _passes(conf, ["and", ["not", ["=", "$vcpus_total", 4]]], **HOST)
    assert _passes(conf, ["not", ["not", ["=", "$vcpus_total", 8]]], **HOST)


def test_incomparable_values_are_false_not_an_error(conf):
    assert not _passes(conf, ["<", "$hypervisor_type", 5], **HOST)
    assert not _passes(conf, [">=", "$stats", 1], **HOST)
    assert not _passes(conf, ["=", "$vcpus_total", "8"], **HOST)


def test_empty_sub_query_is_true(conf):
    assert _passes(conf, ["and", [], ["=", "$vcpus_total", 8]], **HOST)


def test_query_may_be_given_as_a_list(conf):
    assert _passes(conf, ["=", "$vcpus_total", 8], encode=False, **HOST)
    assert not _passes(conf, ["=", "$vcpus_total", 4], encode=False,
                       **HOST)


def test_query_in_novas_hint_shape(conf):
    """nova's RequestSpec keeps every hint as a list of strings and its
    ``get_scheduler_hint`` unwraps a one-item list; the other hints read
    here (build_near_host_ip, cidr, group, _nova_check_type) take that
    shape too. The JSON text inside is the query."""
    hosts = [make_host("h1", node_id=1, vcpus_total=2),
             make_host("h2", node_id=2, vcpus_total=8)]
    spec = _spec([json.dumps([">=", "$vcpus_total", 4])])
    passed, _ = filter_hosts([JsonFilter(conf)], hosts, spec)
    assert [h.host for h in passed] == ["h2"]
    assert JsonFilter(conf).explain(spec) == (
        'does not satisfy the query hint [">=", "$vcpus_total", 4]')


def test_query_in_novas_hint_shape_through_the_manager(conf, engine,
                                                       register):
    """A request whose hints are nova's lists of one string: the query is
    applied like the cidr hint beside it, not refused."""
    register(node("h1"), node("h2"))
    conf.set_override("enabled_filters", ["ComputeFilter", "JsonFilter"],
                      group="filter_scheduler")
    manager = SchedulerManager(conf, engine)
    spec = {"flavor": {"memory_mb": 512, "vcpus": 1, "root_gb": 1},
            "scheduler_hints": {"query": ['["=", "$host", "h2"]'],
                                "cidr": ["/24"]}}
    [dest] = manager.select_destinations({}, spec=spec)
    assert dest["host"] == "h2"


def test_constant_query(conf):
    assert _passes(conf, ["=", 1, 1])
    assert not _passes(conf, ["=", 1, 2])
    assert _passes(conf, ["and", True, ["in", "a", "b", "a"]])


def test_filter_all_matches_host_passes(conf):
    hosts = [make_host(f"h{i}", node_id=i, vcpus_total=i) for i in range(6)]
    spec = _spec(json.dumps(["and", [">=", "$vcpus_total", 2],
                             ["not", ["=", "$vcpus_total", 4]]]))
    f = JsonFilter(conf)
    assert [h.host for h in f.filter_all(hosts, spec)] == [
        "h2", "h3", "h5"]
    assert f.filter_all(hosts, spec) == [h for h in hosts
                                         if f.host_passes(h, spec)]


# --- malformed queries -------------------------------------------------------

@pytest.mark.parametrize("query,detail", [
    ("[", "not valid JSON"),
    ("{'a': 1}", "not valid JSON"),
    ('{"a": 1}', "expected a JSON list"),
    ("5", "expected a JSON list"),
    ("null", "expected a JSON list"),
    ('["~", "$vcpus_total", 1]', "[0]: unknown operator \"~\""),
    ('[1, 2]', "[0]: unknown operator 1"),
    ('["and", [">=", 1, 1], ["like", "a"]]', "[2][0]: unknown operator"),
    ('["=", {"a": 1}, 1]', "[1]: an object is not a valid argument"),
    ('["and", ' * 40 + "[]" + "]" * 40, "nested deeper than 32"),
    ("[" * 5000 + "]" * 5000, "nested deeper than 32"),
    (json.dumps(["or"] + [1] * 1001), "more than 1000 terms"),
])
def test_malformed_query_is_an_invalid_request(conf, query, detail):
    f = JsonFilter(conf)
    with pytest.raises(exception.InvalidRequest) as e:
        f.filter_all([make_host()], _spec(query))
    assert e.value.message.startswith("spec.scheduler_hints.query")
    assert detail in e.value.message
    assert len(e.value.message) < 300
    with pytest.raises(exception.InvalidRequest):
        f.host_passes(make_host(), _spec(query))


@pytest.mark.parametrize("query", [5, True, {"a": 1}])
def test_query_of_another_type_is_an_invalid_request(conf, query):
    with pytest.raises(exception.InvalidRequest) as e:
        JsonFilter(conf).filter_all([make_host()], _spec(query))
    assert e.value.message.startswith("spec.scheduler_hints.query: ")


def test_malformed_query_is_rejected_even_with_no_host(conf):
    with pytest.raises(exception.InvalidRequest):
        filter_hosts([JsonFilter(conf)], [], _spec("["))


def test_compiled_queries_are_cached():
    text = json.dumps([">=", "$vcpus_total", 1])
    assert compile_query(text) is compile_query(text)


def test_malformed_query_propagates_through_the_driver(conf, engine,
                                                       register):
    register(node("h1"), node("h2"))
    conf.set_override("enabled_filters", ["ComputeFilter", "JsonFilter"],
                      group="filter_scheduler")
    driver = FilterScheduler(conf, HostManager(conf, engine), engine)
    with pytest.raises(exception.InvalidRequest) as e:
        driver.select_destinations(_spec('[">=", "$free_ram_mb"'))
    assert e.value.message.startswith("spec.scheduler_hints.query: ")
    assert allocation_rows(engine) == []
    with pytest.raises(exception.InvalidRequest):
        driver.rank(_spec('["nope"]'), 10)
    # a good query still places
    [dest] = driver.select_destinations(_spec(json.dumps(
        ["=", "$host", "h2"])))
    assert dest["host"] == "h2"


def test_malformed_query_is_an_expected_rpc_error(conf, engine, register):
    register(node("h1"))
    conf.set_override("enabled_filters", ["JsonFilter"],
                      group="filter_scheduler")
    manager = SchedulerManager(conf, engine)
    spec = {"flavor": {"memory_mb": 512, "vcpus": 1, "root_gb": 1},
            "scheduler_hints": {"query": '["~"]'}}
    with pytest.raises(messaging.ExpectedException) as e:
        manager.select_destinations({}, spec=spec)
    assert e.value.exc_info[0] is exception.InvalidRequest
    assert "spec.scheduler_hints.query[0]: unknown operator" in str(
        e.value.exc_info[1])


def test_shape(conf):
    f = JsonFilter(conf)
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == "does not satisfy the query hint"
    assert f.explain(_spec([">", "$vcpus_total", 2])) == \
        'does not satisfy the query hint [">", "$vcpus_total", 2]'
    q = json.dumps([">=", "$free_ram_mb", 1024])
    assert f.explain(_spec(q)) == f"does not satisfy the query hint {q}"
    long = json.dumps(["or"] + [1] * 100)
    assert f.explain(_spec(long)).endswith("...")
    assert len(f.explain(_spec(long))) < 120
    assert "JsonFilter" in plugins.names(plugins.FILTER_NS)


def test_free_ram_and_disk_mean_what_they_mean_in_nova(conf):
    """``$free_ram_mb`` / ``$free_disk_mb`` are physical (total - used),
    whatever the allocation ratios, as nova's HostState has them."""
    host = dict(HOST, ram_allocation_ratio=1.5, disk_allocation_ratio=2.0)
    assert _passes(conf, [">=", "$free_ram_mb", 3072], **host)
    assert not _passes(conf, [">", "$free_ram_mb", 3072], **host)
    assert _passes(conf, [">=", "$free_disk_mb", 60 * 1024], **host)
    assert not _passes(conf, [">", "$free_disk_mb", 60 * 1024], **host)
