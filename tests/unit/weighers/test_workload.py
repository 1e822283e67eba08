"""IoOpsWeigher and NumInstancesWeigher."""
import pytest

from scheduler.decide import plugins
from scheduler.weighers.base import weigh_hosts
from scheduler.weighers.workload import IoOpsWeigher
from scheduler.weighers.workload import NumInstancesWeigher
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _hosts(field, values):
    return [make_host(f"h{i}", node_id=i, **{field: v})
            for i, v in enumerate(values)]


def _order(weighed):
    return [w.host.host for w in weighed]


def test_defaults(conf):
    assert conf.filter_scheduler.io_ops_weight_multiplier == -1.0
    assert conf.filter_scheduler.num_instances_weight_multiplier == 0.0
    assert IoOpsWeigher(conf).multiplier == -1.0
    assert NumInstancesWeigher(conf).multiplier == 0.0


def test_raw_values(conf):
    host = make_host(num_io_ops=3, num_instances=7)
    assert IoOpsWeigher(conf).weigh(host, make_spec()) == 3
    assert NumInstancesWeigher(conf).weigh(host, make_spec()) == 7


def test_io_ops_default_prefers_idle_hosts(conf):
    hosts = _hosts("num_io_ops", [4, 0, 8, 2])
    weighed = weigh_hosts([IoOpsWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["h1", "h3", "h0", "h2"]
    # minval 0: normalized by 8, multiplied by -1
    assert [w.weight for w in weighed] == [0.0, -0.25, -0.5, -1.0]


def test_io_ops_positive_multiplier_prefers_busy_hosts(conf):
    conf.set_override("io_ops_weight_multiplier", 2.0,
                      group="filter_scheduler")
    weighed = weigh_hosts([IoOpsWeigher(conf)],
                          _hosts("num_io_ops", [4, 0, 8]), make_spec())
    assert _order(weighed) == ["h2", "h0", "h1"]
    assert weighed[0].weight == 2.0


def test_io_ops_minval_is_zero(conf):
    weighed = weigh_hosts([IoOpsWeigher(conf)],
                          _hosts("num_io_ops", [2, 4]), make_spec())
    assert {w.host.host: w.weights["IoOpsWeigher"] for w in weighed} == {
        "h0": 0.5, "h1": 1.0}


def test_num_instances_default_is_off(conf):
    hosts = _hosts("num_instances", [5, 1, 9])
    weighed = weigh_hosts([NumInstancesWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["h0", "h1", "h2"]
    assert all(w.weight == 0.0 for w in weighed)


@pytest.mark.parametrize("multiplier,order", [
    (-1.0, ["h1", "h0", "h2"]), (1.0, ["h2", "h0", "h1"])])
def test_num_instances_spread_or_pack(conf, multiplier, order):
    conf.set_override("num_instances_weight_multiplier", multiplier,
                      group="filter_scheduler")
    weighed = weigh_hosts([NumInstancesWeigher(conf)],
                          _hosts("num_instances", [5, 1, 9]), make_spec())
    assert _order(weighed) == order


def test_num_instances_has_no_minval(conf):
    conf.set_override("num_instances_weight_multiplier", 1.0,
                      group="filter_scheduler")
    weighed = weigh_hosts([NumInstancesWeigher(conf)],
                          _hosts("num_instances", [4, 6]), make_spec())
    assert {w.host.host: w.weights["NumInstancesWeigher"]
            for w in weighed} == {"h0": 0.0, "h1": 1.0}


def test_entry_points():
    assert {"IoOpsWeigher", "NumInstancesWeigher"} <= set(
        plugins.names(plugins.WEIGHER_NS))
