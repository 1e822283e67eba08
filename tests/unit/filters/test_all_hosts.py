"""AllHostsFilter: every host passes."""
from scheduler.decide import plugins
from scheduler.filters.all_hosts import AllHostsFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def test_every_host_passes(conf):
    f = AllHostsFilter(conf)
    hosts = [make_host("a", node_id=1),
             make_host("b", node_id=2, service_up=False, memory_mb_total=0)]
    assert all(f.host_passes(h, make_spec()) for h in hosts)
    assert f.filter_all(hosts, make_spec()) == hosts
    assert f.filter_all([], make_spec()) == []


def test_shape(conf):
    f = AllHostsFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec()) == "never rejects"
    assert "AllHostsFilter" in plugins.names(plugins.FILTER_NS)
