"""BuildFailureWeigher: hosts with recent failed builds rank last."""
from scheduler.decide import plugins
from scheduler.weighers.base import weigh_hosts
from scheduler.weighers.build_failure import BuildFailureWeigher
from scheduler.weighers.resources import RAMWeigher
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _order(weighed):
    return [w.host.host for w in weighed]


def test_default_multiplier_is_negated(conf):
    assert conf.filter_scheduler.build_failure_weight_multiplier == \
        1000000.0
    assert BuildFailureWeigher(conf).multiplier == -1000000.0


def test_raw_value_is_failed_builds(conf):
    host = make_host(failed_builds=3)
    assert BuildFailureWeigher(conf).weigh(host, make_spec()) == 3
    assert BuildFailureWeigher(conf).weigh(make_host(), make_spec()) == 0


def test_more_failures_rank_lower(conf):
    hosts = [make_host(f"h{i}", node_id=i, failed_builds=n)
             for i, n in enumerate([2, 0, 4, 1])]
    weighed = weigh_hosts([BuildFailureWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["h1", "h3", "h0", "h2"]
    assert weighed[0].weight == 0.0
    assert weighed[-1].weight == -1000000.0


def test_outweighs_the_resource_weighers(conf):
    hosts = [make_host("roomy", node_id=1, memory_mb_total=65536,
                       failed_builds=1),
             make_host("small", node_id=2, memory_mb_total=2048)]
    weighed = weigh_hosts([RAMWeigher(conf), BuildFailureWeigher(conf)],
                          hosts, make_spec())
    assert _order(weighed) == ["small", "roomy"]


def test_zero_multiplier_disables_it(conf):
    conf.set_override("build_failure_weight_multiplier", 0.0,
                      group="filter_scheduler")
    hosts = [make_host("a", node_id=1, failed_builds=5),
             make_host("b", node_id=2)]
    weighed = weigh_hosts([BuildFailureWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["a", "b"]
    assert weighed[0].weights == {}


def test_entry_point():
    assert "BuildFailureWeigher" in plugins.names(plugins.WEIGHER_NS)
