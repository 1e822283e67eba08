"""ServerGroupSoftAffinityWeigher, ServerGroupSoftAntiAffinityWeigher: the
soft policies weigh by the members on each host and never refuse one."""
from __future__ import annotations

import pytest

from scheduler.decide import plugins
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.weighers.base import weigh_hosts
from scheduler.weighers.server_group import ServerGroupSoftAffinityWeigher
from scheduler.weighers.server_group import \
    ServerGroupSoftAntiAffinityWeigher
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec

SOFT = ServerGroupSoftAffinityWeigher
ANTI = ServerGroupSoftAntiAffinityWeigher
MEMBERS = ("h2", "h2", "h3", "elsewhere")


def _spec(policy=None, hosts=MEMBERS):
    if policy is None:
        return make_spec()
    return make_spec(instance_group={
        "uuid": "dddddddd-0000-4000-8000-000000000009",
        "policies": [policy], "hosts": list(hosts)})


def _hosts():
    # h2 has two nodes: members count per host, on each of its nodes
    return [make_host("h1", node_id=1), make_host("h2", "h2-a", node_id=2),
            make_host("h3", node_id=3), make_host("h2", "h2-b", node_id=4)]


def _raw(weigher, spec):
    hosts = _hosts()
    raw = [weigher.weigh(h, spec) for h in hosts]
    view = HostView(HostTable(hosts))
    assert list(weigher.weigh_columns(view, view.all_positions(), spec)) \
        == raw
    return raw


def _order(weighed):
    return [w.host.nodename for w in weighed]


def test_defaults_and_registration(conf):
    fs = conf.filter_scheduler
    assert fs.soft_affinity_weight_multiplier == 1.0
    assert fs.soft_anti_affinity_weight_multiplier == 1.0
    assert fs.weighers[-2:] == ["ServerGroupSoftAffinityWeigher",
                                "ServerGroupSoftAntiAffinityWeigher"]
    assert {"ServerGroupSoftAffinityWeigher",
            "ServerGroupSoftAntiAffinityWeigher"} <= set(
        plugins.names(plugins.WEIGHER_NS))
    assert [w.name for w in plugins.load_weighers(conf)] == fs.weighers


@pytest.mark.parametrize("option", ["soft_affinity_weight_multiplier",
                                    "soft_anti_affinity_weight_multiplier"])
def test_multipliers_cannot_be_negative(conf, option):
    with pytest.raises(ValueError):
        conf.set_override(option, -1.0, group="filter_scheduler")
    conf.set_override(option, 0.0, group="filter_scheduler")


def test_raw_values_count_members_per_host(conf):
    assert _raw(SOFT(conf), _spec("soft-affinity")) == [0, 2, 1, 2]
    assert _raw(ANTI(conf), _spec("soft-anti-affinity")) == [0, -2, -1, -2]


@pytest.mark.parametrize("policy", [None, "affinity", "anti-affinity",
                                    "soft-anti-affinity"])
def test_soft_affinity_is_zero_without_its_policy(conf, policy):
    assert _raw(SOFT(conf), _spec(policy)) == [0, 0, 0, 0]


@pytest.mark.parametrize("policy", [None, "affinity", "anti-affinity",
                                    "soft-affinity"])
def test_soft_anti_affinity_is_zero_without_its_policy(conf, policy):
    assert _raw(ANTI(conf), _spec(policy)) == [0, 0, 0, 0]


def test_no_members_yet_weighs_every_host_the_same(conf):
    for cls, policy in ((SOFT, "soft-affinity"),
                        (ANTI, "soft-anti-affinity")):
        weighed = weigh_hosts([cls(conf)], _hosts(), _spec(policy, ()))
        assert [w.weight for w in weighed] == [0.0] * 4
        assert _order(weighed) == ["h1", "h2-a", "h3", "h2-b"]


@pytest.mark.parametrize("cls,policy", [(SOFT, "soft-affinity"),
                                        (ANTI, "soft-anti-affinity")])
def test_skipped_unless_a_group_with_its_policy_has_members(conf, cls,
                                                            policy):
    w = cls(conf)
    assert w.applies(_spec(policy))
    for spec in (_spec(), _spec(policy, ()), _spec("affinity"),
                 _spec("anti-affinity")):
        assert not w.applies(spec)
        # skipped: not among the weights shown
        assert all(x.weights == {} for x in weigh_hosts([w], _hosts(), spec))
    assert all(set(x.weights) == {w.name}
               for x in weigh_hosts([w], _hosts(), _spec(policy)))


def test_soft_affinity_prefers_the_hosts_with_most_members(conf):
    weighed = weigh_hosts([SOFT(conf)], _hosts(), _spec("soft-affinity"))
    assert _order(weighed) == ["h2-a", "h2-b", "h3", "h1"]
    # normalized over the hosts weighed (no fixed bounds): 2 -> 1, 1 -> .5
    assert [w.weight for w in weighed] == [1.0, 1.0, 0.5, 0.0]


def test_soft_anti_affinity_prefers_the_hosts_with_fewest_members(conf):
    weighed = weigh_hosts([ANTI(conf)], _hosts(),
                          _spec("soft-anti-affinity"))
    assert _order(weighed) == ["h1", "h3", "h2-a", "h2-b"]
    assert [w.weight for w in weighed] == [1.0, 0.5, 0.0, 0.0]


def test_the_multiplier_scales_and_zero_turns_it_off(conf):
    conf.set_override("soft_affinity_weight_multiplier", 3.0,
                      group="filter_scheduler")
    weighed = weigh_hosts([SOFT(conf)], _hosts(), _spec("soft-affinity"))
    assert weighed[0].weight == 3.0
    assert weighed[0].weights == {"ServerGroupSoftAffinityWeigher": 1.0}
    conf.set_override("soft_affinity_weight_multiplier", 0.0,
                      group="filter_scheduler")
    weighed = weigh_hosts([SOFT(conf)], _hosts(), _spec("soft-affinity"))
    assert _order(weighed) == ["h1", "h2-a", "h3", "h2-b"]
    assert weighed[0].weights == {}


def test_columns_on_a_subset_of_hosts(conf):
    hosts = _hosts()
    view = HostView(HostTable(hosts))
    idx = view.all_positions()[[3, 0]]
    assert list(SOFT(conf).weigh_columns(view, idx,
                                         _spec("soft-affinity"))) == [2, 0]
    assert list(ANTI(conf).weigh_columns(view, idx[:0],
                                         _spec("soft-anti-affinity"))) == []
