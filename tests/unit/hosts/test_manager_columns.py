"""HostManager: the JSON columns the filters and weighers read
(supported_instances, metrics, cpu_info, the failed_builds stat)."""
from __future__ import annotations

import json

import pytest

from tests.unit.fakes import node
from tests.unit.fakes import set_node


def _state(register, engine, host_manager, **values):
    register(node("h1"))
    if values:
        set_node(engine, "h1", **values)
    [state] = host_manager.host_states()
    return state


def test_fleet_defaults_are_empty(register, engine, host_manager):
    state = _state(register, engine, host_manager)
    assert state.supported_instances == ()
    assert state.metrics == {}
    assert state.cpu_info == {}
    assert state.failed_builds == 0


def test_supported_instances(register, engine, host_manager):
    raw = json.dumps([["x86_64", "kvm", "hvm"], ["I686", "QEMU", "HVM"],
                      ["aarch64", "kvm"], ["x", "y", "z", "extra"], "bad",
                      [], ["ppc64le", None, ""]])
    state = _state(register, engine, host_manager, supported_instances=raw)
    assert state.supported_instances == (
        ("x86_64", "kvm", "hvm"), ("i686", "qemu", "hvm"),
        ("aarch64", "kvm", None), ("ppc64le", None, None))


def test_metrics(register, engine, host_manager):
    raw = json.dumps([
        {"name": "cpu.percent", "value": 0.125, "timestamp": "2015-01-01",
         "source": "libvirt.LibvirtDriver"},
        {"name": "cpu.frequency", "value": 1600},
        {"name": "as.text", "value": "3"},
        {"name": "bad.value", "value": "lots"},
        {"name": "no.value"},
        {"name": "bool", "value": True},
        {"value": 5},
        "junk"])
    state = _state(register, engine, host_manager, metrics=raw)
    assert state.metrics == {"cpu.percent": 12.5, "cpu.frequency": 1600.0,
                             "as.text": 3.0}


def test_cpu_info(register, engine, host_manager):
    info = {"arch": "x86_64", "topology": {"cores": 4, "sockets": 1},
            "features": ["sse", "avx"]}
    state = _state(register, engine, host_manager, cpu_info=json.dumps(info))
    assert state.cpu_info == info


def test_failed_builds_from_stats(register, engine, host_manager):
    state = _state(register, engine, host_manager,
                   stats=json.dumps({"failed_builds": "3",
                                     "num_instances": "2"}))
    assert state.failed_builds == 3
    assert state.stats["failed_builds"] == "3"


@pytest.mark.parametrize("column,value", [
    ("supported_instances", "not json"), ("supported_instances", '{"a": 1}'),
    ("supported_instances", None), ("metrics", "[{"), ("metrics", "5"),
    ("metrics", None), ("metrics", "[" * 100000),
    ("supported_instances", "[" * 100000 + "]" * 100000),
    ("cpu_info", "nope"), ("cpu_info", "[1, 2]"),
    ("cpu_info", '{"a":' * 100000 + "1" + "}" * 100000),
    ("stats", json.dumps({"failed_builds": "many"}))])
def test_bad_json_reads_as_empty(register, engine, host_manager, column,
                                 value):
    state = _state(register, engine, host_manager, **{column: value})
    assert state.supported_instances == ()
    assert state.metrics == {}
    assert state.cpu_info == {}
    assert state.failed_builds == 0


def test_consumed_keeps_the_parsed_columns(register, engine, host_manager):
    state = _state(register, engine, host_manager,
                   supported_instances='[["x86_64", "kvm", "hvm"]]',
                   metrics='[{"name": "m", "value": 1}]',
                   cpu_info='{"arch": "x86_64"}',
                   stats='{"failed_builds": 2}')
    after = state.consumed(1, 512, 1)
    assert after.supported_instances == state.supported_instances
    assert after.metrics == {"m": 1.0}
    assert after.cpu_info == {"arch": "x86_64"}
    assert after.failed_builds == 2


def test_percent_metrics_are_read_in_percent_as_nova_weighs_them(
        conf, register, engine, host_manager):
    """nova's compute stores its CPU percent metrics divided by 100
    (``MonitorMetric.to_dict``: 90 % is 0.9 in the column); nova's
    scheduler multiplies them back when it reads the column
    (``MonitorMetricList.from_json``), so its MetricsWeigher weighs 90,
    not 0.9. Read otherwise, a percent weighs a hundredth of what it does
    in nova beside the other metrics and weight_of_unavailable, and the
    ranking changes."""
    from scheduler.weighers.base import weigh_hosts
    from scheduler.weighers.metrics import MetricsWeigher
    from tests.unit.fakes import make_spec

    register(node("busy"), node("idle"))
    for host, percent, mhz in (("busy", 0.9, 3000), ("idle", 0.1, 2000)):
        set_node(engine, host, metrics=json.dumps([
            {"name": "cpu.percent", "value": percent},
            {"name": "cpu.frequency", "value": mhz}]))
    states = {s.host: s for s in host_manager.host_states()}
    assert states["busy"].metrics["cpu.percent"] == pytest.approx(90.0)
    assert states["busy"].metrics["cpu.frequency"] == 3000.0
    # nova: busy -90 + 3 = -87, idle -10 + 2 = -8: the idle host wins.
    conf.set_override("weight_setting",
                      ["cpu.percent=-1.0", "cpu.frequency=0.001"],
                      group="metrics")
    weighed = weigh_hosts([MetricsWeigher(conf)], list(states.values()),
                          make_spec())
    assert [w.host.host for w in weighed] == ["idle", "busy"]
