"""Plugins through scheduler.decide.plugins without installing anything: filters
and weighers injected with stevedore's test managers, and entry points that
exist only in stevedore's entry-point list (one that does not import, one
that does)."""
from __future__ import annotations

import importlib.metadata

import pytest
from stevedore import extension
from stevedore import named

from scheduler import exception
from scheduler.decide import plugins
from scheduler.decide.filter import FilterScheduler
from tests.example_plugins import EvenHostsFilter
from tests.example_plugins import HostNameWeigher
from tests.unit.conftest import fresh_host_manager
from tests.unit.fakes import make_spec
from tests.unit.fakes import node


def _inject(monkeypatch, available: dict[str, type]) -> list:
    """Make ``plugins`` load from ``available`` (name -> class) with
    ``NamedExtensionManager.make_test_instance`` instead of entry points,
    keeping the real manager's contract: the configured names, in that
    order, instantiated with ``conf``, the missing ones reported."""
    calls = []
    real = named.NamedExtensionManager

    def manager(namespace, names, name_order, invoke_on_load, invoke_args,
                on_load_failure_callback, on_missing_entrypoints_callback):
        calls.append((namespace, list(names)))
        conf, = invoke_args
        missing = [n for n in names if n not in available]
        if missing:
            on_missing_entrypoints_callback(missing)
        return real.make_test_instance(
            [extension.Extension(n, None, available[n], available[n](conf))
             for n in names if n in available], namespace=namespace,
            on_load_failure_callback=on_load_failure_callback)

    monkeypatch.setattr(plugins.named, "NamedExtensionManager", manager)
    return calls


def test_injected_filter_and_weigher_drive_placement(conf, engine, register,
                                                     monkeypatch):
    from scheduler.filters.compute import ComputeFilter
    from scheduler.filters.resources import RamFilter
    calls = _inject(monkeypatch, {
        "ComputeFilter": ComputeFilter, "RamFilter": RamFilter,
        "EvenHostsFilter": EvenHostsFilter,
        "HostNameWeigher": HostNameWeigher})
    conf.set_override("enabled_filters", ["ComputeFilter",
                                          "EvenHostsFilter", "RamFilter"],
                      group="filter_scheduler")
    conf.set_override("weighers", ["HostNameWeigher"],
                      group="filter_scheduler")
    driver = FilterScheduler(conf, fresh_host_manager(conf, engine), engine)
    assert calls == [
        ("scheduler.filters", ["ComputeFilter", "EvenHostsFilter",
                               "RamFilter"]),
        ("scheduler.weighers", ["HostNameWeigher"])]
    # CoreFilter and DiskFilter too: the claim checks every capacity.
    assert [f.name for f in driver.filters] == [
        "ComputeFilter", "EvenHostsFilter", "RamFilter", "CoreFilter",
        "DiskFilter"]

    register(*(node(f"host-{i}", memory_mb=4096) for i in range(1, 6)))
    # the weigher prefers the highest number the filter lets through
    [dest] = driver.select_destinations(make_spec())
    assert dest["host"] == "host-4"
    conf.set_override("host_name_weight_multiplier", -1.0,
                      group="filter_scheduler")
    driver.reload()   # what SIGHUP does: settings apply with a new set
    [dest] = driver.select_destinations(make_spec())
    assert dest["host"] == "host-2"

    with pytest.raises(exception.NoValidHost) as info:
        driver.select_destinations(make_spec(flavor={"memory_mb": 3000}))
    assert info.value.message == (
        "No valid host: 0/5 hosts passed. EvenHostsFilter removed 3 "
        "(odd-numbered host), RamFilter removed 2 (insufficient RAM: need "
        "3000 MB)")


def test_injected_manager_reports_missing_names(conf, monkeypatch):
    _inject(monkeypatch, {"EvenHostsFilter": EvenHostsFilter})
    conf.set_override("enabled_filters", ["EvenHostsFilter", "Nope"],
                      group="filter_scheduler")
    with pytest.raises(exception.ConfigError) as info:
        plugins.load_filters(conf)
    assert str(info.value).startswith(
        "[filter_scheduler] enabled_filters: no plugin named Nope in "
        "namespace 'scheduler.filters'")


def _entry_points(monkeypatch, namespace: str, **extra: str) -> None:
    """stevedore's entry points of ``namespace``: the installed ones plus
    ``extra`` (name -> "module:attr"), as if some package declared them."""
    installed = extension.ExtensionManager(namespace).list_entry_points()
    eps = list(installed) + [
        importlib.metadata.EntryPoint(name, value, namespace)
        for name, value in extra.items()]
    monkeypatch.setitem(extension.ExtensionManager.ENTRY_POINT_CACHE,
                        namespace, eps)


def test_a_plugin_registered_by_entry_point_only_loads(conf, monkeypatch):
    _entry_points(monkeypatch, plugins.FILTER_NS,
                  EvenHostsFilter="tests.example_plugins:EvenHostsFilter")
    _entry_points(monkeypatch, plugins.WEIGHER_NS,
                  HostNameWeigher="tests.example_plugins:HostNameWeigher")
    assert "EvenHostsFilter" in plugins.names(plugins.FILTER_NS)
    conf.set_override("enabled_filters", ["EvenHostsFilter",
                                          "ComputeFilter"],
                      group="filter_scheduler")
    conf.set_override("weighers", ["RAMWeigher", "HostNameWeigher"],
                      group="filter_scheduler")
    filters = plugins.load_filters(conf)
    assert [type(f) for f in filters][0] is EvenHostsFilter
    assert [f.name for f in plugins.load_weighers(conf)] == [
        "RAMWeigher", "HostNameWeigher"]


def test_a_plugin_that_fails_to_import_is_a_config_error_naming_it(
        conf, monkeypatch):
    _entry_points(monkeypatch, plugins.FILTER_NS,
                  BrokenFilter="no_such_plugin_module:BrokenFilter")
    # not enabled: never imported, no error
    assert plugins.load_filters(conf)
    conf.set_override("enabled_filters", ["ComputeFilter", "BrokenFilter"],
                      group="filter_scheduler")
    with pytest.raises(exception.ConfigError) as info:
        plugins.load_filters(conf)
    assert str(info.value) == (
        "[filter_scheduler] enabled_filters: plugin 'BrokenFilter' from "
        "namespace 'scheduler.filters' failed to load: No module named "
        "'no_such_plugin_module'")


def test_a_plugin_whose_class_is_missing_is_a_config_error(conf,
                                                           monkeypatch):
    _entry_points(monkeypatch, plugins.WEIGHER_NS,
                  GhostWeigher="tests.example_plugins:GhostWeigher")
    conf.set_override("weighers", ["GhostWeigher"], group="filter_scheduler")
    with pytest.raises(exception.ConfigError) as info:
        plugins.load_weighers(conf)
    assert "[filter_scheduler] weighers: plugin 'GhostWeigher'" in str(
        info.value)
    assert "GhostWeigher" in str(info.value).split("failed to load: ")[1]


def test_novas_weight_classes_spelling_carries_over(conf):
    """An operator's nova.conf names weighers by class path
    (nova/conf/scheduler.py ``weight_classes``, default
    ``nova.scheduler.weights.all_weighers``): the same setting loads the
    same weighers here instead of stopping start-up."""
    conf.set_override("weighers",
                      ["nova.scheduler.weights.ram.RAMWeigher",
                       "nova.scheduler.weights.io_ops.IoOpsWeigher"],
                      group="filter_scheduler")
    assert [type(w).__name__ for w in plugins.load_weighers(conf)] == [
        "RAMWeigher", "IoOpsWeigher"]
    conf.set_override("weighers", ["nova.scheduler.weights.all_weighers"],
                      group="filter_scheduler")
    assert sorted(type(w).__name__ for w in plugins.load_weighers(conf)) == \
        plugins.names(plugins.WEIGHER_NS)
