"""MetricsFilter: every metric of [metrics] weight_setting reported."""
from scheduler.decide import plugins
from scheduler.filters.metrics import MetricsFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _setting(conf, *items):
    conf.set_override("weight_setting", list(items), group="metrics")


def _passes(conf, metrics):
    return MetricsFilter(conf).host_passes(make_host(metrics=metrics),
                                           make_spec())


def test_no_setting_passes_every_host(conf):
    assert conf.metrics.weight_setting == []
    assert _passes(conf, {})
    assert _passes(conf, {"cpu.percent": 5.0})


def test_every_named_metric_must_be_reported(conf):
    _setting(conf, "cpu.percent=1.0", "mem.free=-0.5")
    assert _passes(conf, {"cpu.percent": 5.0, "mem.free": 1.0})
    assert _passes(conf, {"cpu.percent": 5.0, "mem.free": 1.0, "x": 2.0})
    assert not _passes(conf, {"cpu.percent": 5.0})
    assert not _passes(conf, {})


def test_a_metric_with_value_zero_is_reported(conf):
    _setting(conf, "cpu.percent=1.0")
    assert _passes(conf, {"cpu.percent": 0.0})


def test_ratio_zero_still_names_the_metric(conf):
    _setting(conf, "cpu.percent=0")
    assert not _passes(conf, {})


def test_invalid_elements_are_ignored(conf):
    _setting(conf, "cpu.percent", "=1.0", "mem.free=lots", "ok=2")
    assert _passes(conf, {"ok": 1.0})
    assert not _passes(conf, {"cpu.percent": 1.0, "mem.free": 1.0})


def test_filter_all_matches_host_passes(conf):
    _setting(conf, "a=1", "b=1")
    hosts = [make_host("h1", node_id=1, metrics={"a": 1.0, "b": 2.0}),
             make_host("h2", node_id=2, metrics={"a": 1.0}),
             make_host("h3", node_id=3)]
    f = MetricsFilter(conf)
    assert [h.host for h in f.filter_all(hosts, make_spec())] == ["h1"]


def test_shape(conf):
    f = MetricsFilter(conf)
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == f.reason
    _setting(conf, "mem.free=1", "cpu.percent=-1")
    assert f.explain(make_spec()) == (
        "does not report the metrics in [metrics] weight_setting: "
        "cpu.percent, mem.free")
    assert "MetricsFilter" in plugins.names(plugins.FILTER_NS)
