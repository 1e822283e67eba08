"""ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter: hard server
group policies on the group's ``hosts`` (one entry per placed member)."""
import pytest

from scheduler.filters.base import filter_hosts
from scheduler.filters.server_group import ServerGroupAffinityFilter
from scheduler.filters.server_group import ServerGroupAntiAffinityFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec

GROUP = "dddddddd-0000-4000-8000-000000000001"


def _spec(policy=None, hosts=(), max_per_host=None, with_uuid=True):
    if policy is None:
        return make_spec()
    group = {"policies": [policy], "hosts": list(hosts)}
    if with_uuid:
        group["uuid"] = GROUP
    if max_per_host is not None:
        group["rules"] = {"max_server_per_host": max_per_host}
    return make_spec(instance_group=group)


def _hosts(*names):
    return [make_host(name, node_id=i + 1) for i, name in enumerate(names)]


def _names(hosts):
    return [h.host for h in hosts]


ALL = ("h1", "h2", "h3")


# --- anti-affinity --------------------------------------------------------

@pytest.mark.parametrize("members,limit,passing", [
    ((), None, ["h1", "h2", "h3"]),
    (("h1",), None, ["h2", "h3"]),
    (("h1", "h3"), None, ["h2"]),
    (("h1", "h2", "h3"), None, []),
    (("h1",), 2, ["h1", "h2", "h3"]),
    (("h1", "h1"), 2, ["h2", "h3"]),
    (("h1", "h1", "h2"), 2, ["h2", "h3"]),
    (("h1", "h1", "h1"), 3, ["h2", "h3"]),
    (("h1", "h2", "h2"), 3, ["h1", "h2", "h3"]),
    (("elsewhere",), None, ["h1", "h2", "h3"]),
])
def test_anti_affinity_counts_members_per_host(conf, members, limit,
                                               passing):
    f = ServerGroupAntiAffinityFilter(conf)
    spec = _spec("anti-affinity", members, limit)
    hosts = _hosts(*ALL)
    assert _names(f.filter_all(hosts, spec)) == passing
    # host_passes agrees with filter_all
    assert [h.host for h in hosts if f.host_passes(h, spec)] == passing


def test_anti_affinity_keeps_the_order_and_nodes_of_one_host(conf):
    hosts = [make_host("h2", "n1", node_id=1), make_host("h1", "n2",
                                                         node_id=2),
             make_host("h2", "n3", node_id=3), make_host("h3", "n4",
                                                         node_id=4)]
    spec = _spec("anti-affinity", ["h2"])
    out = ServerGroupAntiAffinityFilter(conf).filter_all(hosts, spec)
    assert [h.nodename for h in out] == ["n2", "n4"]


@pytest.mark.parametrize("policy", [None, "affinity", "soft-affinity",
                                    "soft-anti-affinity"])
def test_anti_affinity_passes_everything_without_its_policy(conf, policy):
    f = ServerGroupAntiAffinityFilter(conf)
    spec = _spec(policy, ["h1", "h2", "h3"])
    hosts = _hosts(*ALL)
    assert f.filter_all(hosts, spec) == hosts
    assert all(f.host_passes(h, spec) for h in hosts)


def test_anti_affinity_without_a_group_uuid(conf):
    spec = _spec("anti-affinity", ["h2"], with_uuid=False)
    f = ServerGroupAntiAffinityFilter(conf)
    assert _names(f.filter_all(_hosts(*ALL), spec)) == ["h1", "h3"]


# --- affinity -------------------------------------------------------------

@pytest.mark.parametrize("members,passing", [
    ((), ["h1", "h2", "h3"]),
    (("h2",), ["h2"]),
    (("h2", "h2", "h2"), ["h2"]),
    (("h1", "h3"), ["h1", "h3"]),
    (("elsewhere",), []),
])
def test_affinity_keeps_the_hosts_holding_members(conf, members, passing):
    f = ServerGroupAffinityFilter(conf)
    spec = _spec("affinity", members)
    hosts = _hosts(*ALL)
    assert _names(f.filter_all(hosts, spec)) == passing
    assert [h.host for h in hosts if f.host_passes(h, spec)] == passing


def test_affinity_with_no_members_passes_all(conf):
    hosts = _hosts(*ALL)
    assert ServerGroupAffinityFilter(conf).filter_all(
        hosts, _spec("affinity")) == hosts


@pytest.mark.parametrize("policy", [None, "anti-affinity", "soft-affinity",
                                    "soft-anti-affinity"])
def test_affinity_passes_everything_without_its_policy(conf, policy):
    f = ServerGroupAffinityFilter(conf)
    spec = _spec(policy, ["h1"])
    hosts = _hosts(*ALL)
    assert f.filter_all(hosts, spec) == hosts
    assert all(f.host_passes(h, spec) for h in hosts)


# --- shape ----------------------------------------------------------------

def test_reasons_are_stable(conf):
    anti = ServerGroupAntiAffinityFilter(conf)
    aff = ServerGroupAffinityFilter(conf)
    assert anti.reason == ("server group anti-affinity: host already holds "
                           "a member")
    assert aff.reason == "server group affinity: host holds no member"
    assert anti.explain(_spec("anti-affinity", ["h1"])) == anti.reason
    assert aff.explain(_spec("affinity", ["h1"])) == aff.reason
    assert anti.name == "ServerGroupAntiAffinityFilter"
    assert aff.name == "ServerGroupAffinityFilter"
    # members can change between instances of one request
    assert anti.run_filter_once_per_request is False
    assert aff.run_filter_once_per_request is False
    assert anti.limits(make_host()) == {} and aff.limits(make_host()) == {}


def test_the_loop_explains_with_the_reason(conf):
    steps = filter_hosts([ServerGroupAntiAffinityFilter(conf)],
                        _hosts(*ALL), _spec("anti-affinity", ["h1", "h3"]))
    passed, [step] = steps
    assert _names(passed) == ["h2"]
    assert (step.name, step.hosts_in, step.hosts_out, step.reason) == (
        "ServerGroupAntiAffinityFilter", 3, 1,
        "server group anti-affinity: host already holds a member")


def test_the_reason_names_max_server_per_host(conf):
    """With max_server_per_host 2 a host holding one member passes: the
    refusal must not say that holding a member is what removed a host."""
    steps = filter_hosts([ServerGroupAntiAffinityFilter(conf)],
                        _hosts(*ALL), _spec("anti-affinity",
                                            ["h1", "h1", "h3"], 2))
    passed, [step] = steps
    assert _names(passed) == ["h2", "h3"]
    assert step.reason == ("server group anti-affinity: host already holds "
                           "2 members (max_server_per_host)")
