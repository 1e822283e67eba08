"""MetricsWeigher: sum of ratio x metric, missing metrics, options."""
import logging

import pytest

from scheduler.decide import plugins
from scheduler.weighers import metrics as metrics_mod
from scheduler.weighers.base import weigh_hosts
from scheduler.weighers.metrics import MetricsWeigher
from scheduler.weighers.metrics import parse_weight_setting
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _setting(conf, *items, **opts):
    conf.set_override("weight_setting", list(items), group="metrics")
    for name, value in opts.items():
        conf.set_override(name, value, group="metrics")


def _weigh(conf, metrics, host="h1"):
    return MetricsWeigher(conf).weigh(make_host(host, metrics=metrics),
                                      make_spec())


def _order(weighed):
    return [w.host.host for w in weighed]


def test_option_defaults(conf):
    m = conf.metrics
    assert m.weight_multiplier == 1.0
    assert m.weight_setting == []
    assert m.required is True
    assert m.weight_of_unavailable == -10000.0
    assert MetricsWeigher(conf).multiplier == 1.0


def test_multiplier_comes_from_the_metrics_group(conf):
    _setting(conf, weight_multiplier=-2.5)
    assert MetricsWeigher(conf).multiplier == -2.5


def test_no_setting_weighs_zero(conf):
    assert _weigh(conf, {"cpu.percent": 50.0}) == 0.0


def test_weighted_sum(conf):
    _setting(conf, "cpu.idle=1.0", "mem.free=-0.5")
    assert _weigh(conf, {"cpu.idle": 40.0, "mem.free": 10.0,
                         "other": 99.0}) == 35.0


def test_parse_weight_setting():
    assert parse_weight_setting(("a=1", " b = -2.5 ", "c=0")) == (
        ("a", 1.0), ("b", -2.5), ("c", 0.0))
    assert parse_weight_setting(("a", "=1", "b=x", "c=", "d=2")) == (
        ("d", 2.0),)


def test_invalid_elements_are_ignored_with_one_warning(conf, caplog):
    caplog.set_level(logging.WARNING)
    _setting(conf, "cpu.idle=1.0", "broken-setting-xyz")
    for _ in range(3):
        assert _weigh(conf, {"cpu.idle": 4.0}) == 4.0
    warnings = [r for r in caplog.records
                if "broken-setting-xyz" in r.getMessage()]
    assert len(warnings) == 1


@pytest.mark.parametrize("required", [True, False])
def test_missing_metric_weighs_unavailable_never_raises(conf, required):
    _setting(conf, "cpu.idle=1.0", "mem.free=1.0", required=required)
    assert _weigh(conf, {"cpu.idle": 4.0}) == -10000.0
    assert _weigh(conf, {}) == -10000.0


def test_weight_of_unavailable_option(conf):
    _setting(conf, "cpu.idle=1.0", weight_of_unavailable=-5.0,
             required=False)
    assert _weigh(conf, {}) == -5.0


def test_missing_metric_with_ratio_zero_does_not_count(conf):
    _setting(conf, "cpu.idle=1.0", "mem.free=0")
    assert _weigh(conf, {"cpu.idle": 4.0}) == 4.0


def test_missing_metric_on_a_host_whose_multiplier_is_zero_does_not_count(
        conf):
    # nova: skipped when ratio * weight_multiplier(host) == 0, so the host
    # does not get weight_of_unavailable and squash everyone else's range.
    from scheduler.hosts.state import Aggregate
    from scheduler.weighers.resources import RAMWeigher
    _setting(conf, "cpu.frequency=1.0")
    counted = (Aggregate(1, "a1", {}),)
    silent = (Aggregate(2, "a0", {"metrics_weight_multiplier": "0"}),)
    hosts = [make_host("a", node_id=1, memory_mb_total=1000,
                       aggregates=counted, metrics={"cpu.frequency": 10.0}),
             make_host("b", node_id=2, memory_mb_total=800,
                       aggregates=counted, metrics={"cpu.frequency": 20.0}),
             make_host("c", node_id=3, memory_mb_total=0, aggregates=silent)]
    weighed = weigh_hosts([RAMWeigher(conf), MetricsWeigher(conf)], hosts,
                          make_spec())
    # What nova 34's own weighers give these hosts.
    assert [(w.host.host, round(w.weight, 4)) for w in weighed] == [
        ("b", 1.8), ("a", 1.5), ("c", 0.0)]


def test_required_missing_metric_is_logged_once_per_metric(conf, caplog):
    caplog.set_level(logging.WARNING)
    metrics_mod._warned_missing.discard("test.only.metric")
    _setting(conf, "test.only.metric=1.0", required=True)
    for host in ("h1", "h2", "h3"):
        _weigh(conf, {}, host=host)
    logged = [r for r in caplog.records
              if "test.only.metric" in r.getMessage()]
    assert len(logged) == 1


def test_not_required_missing_metric_is_not_logged(conf, caplog):
    caplog.set_level(logging.WARNING)
    metrics_mod._warned_missing.discard("quiet.metric")
    _setting(conf, "quiet.metric=1.0", required=False)
    _weigh(conf, {})
    assert not [r for r in caplog.records
                if "quiet.metric" in r.getMessage()]


def test_hosts_missing_a_metric_rank_last(conf):
    _setting(conf, "cpu.idle=1.0")
    hosts = [make_host("missing", node_id=1),
             make_host("busy", node_id=2, metrics={"cpu.idle": 10.0}),
             make_host("idle", node_id=3, metrics={"cpu.idle": 90.0})]
    weighed = weigh_hosts([MetricsWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["idle", "busy", "missing"]
    assert weighed[0].weight == 1.0 and weighed[-1].weight == 0.0


def test_negative_multiplier_reverses(conf):
    _setting(conf, "cpu.idle=1.0", weight_multiplier=-1.0)
    hosts = [make_host("busy", node_id=2, metrics={"cpu.idle": 10.0}),
             make_host("idle", node_id=3, metrics={"cpu.idle": 90.0})]
    weighed = weigh_hosts([MetricsWeigher(conf)], hosts, make_spec())
    assert _order(weighed) == ["busy", "idle"]


def test_options_are_read_per_request(conf):
    w = MetricsWeigher(conf)
    host = make_host(metrics={"a": 2.0, "b": 3.0})
    _setting(conf, "a=1")
    spec = make_spec()
    assert w.weigh(host, spec) == 2.0
    _setting(conf, "b=1")
    assert w.weigh(host, spec) == 2.0      # same request: same setting
    assert w.weigh(host, make_spec()) == 3.0


def test_entry_point():
    assert "MetricsWeigher" in plugins.names(plugins.WEIGHER_NS)
