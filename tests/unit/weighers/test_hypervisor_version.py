"""HypervisorVersionWeigher: newer hypervisors first, as in nova."""
from scheduler.decide import plugins
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.weighers.base import weigh_hosts
from scheduler.weighers.hypervisor_version import HypervisorVersionWeigher
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _hosts():
    return [make_host("old", node_id=1, hypervisor_version=6000000),
            make_host("new", node_id=2, hypervisor_version=8002000),
            make_host("unknown", node_id=3, hypervisor_version=0),
            make_host("mid", node_id=4, hypervisor_version=7001000)]


def _order(weighed):
    return [w.host.host for w in weighed]


def test_newer_hosts_first_by_default(conf):
    assert conf.filter_scheduler.hypervisor_version_weight_multiplier == 1.0
    weighed = weigh_hosts([HypervisorVersionWeigher(conf)], _hosts(),
                          make_spec())
    assert _order(weighed) == ["new", "mid", "old", "unknown"]


def test_negative_multiplier_prefers_older_hosts(conf):
    conf.set_override("hypervisor_version_weight_multiplier", -1.0,
                      group="filter_scheduler")
    weighed = weigh_hosts([HypervisorVersionWeigher(conf)], _hosts(),
                          make_spec())
    assert _order(weighed) == ["unknown", "old", "mid", "new"]


def test_columns_agree_with_hosts(conf):
    weigher = HypervisorVersionWeigher(conf)
    view = HostView(HostTable(_hosts()))
    idx = view.all_positions()
    assert list(weigher.weigh_columns(view, idx, make_spec())) == [
        weigher.weigh(h, make_spec()) for h in _hosts()]


def test_registered_under_novas_name():
    assert "HypervisorVersionWeigher" in plugins.names("scheduler.weighers")
