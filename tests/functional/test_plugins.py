"""Third-party plugins in scheduler-server: found by entry point only (a
``*.dist-info/entry_points.txt`` in a directory on the server's
``PYTHONPATH``, nothing installed), enabled by configuration, and a plugin
that does not import stops start-up naming it."""
from __future__ import annotations

import os
from pathlib import Path
import shutil

import pytest

from scheduler import exception
from tests.functional.conftest import node

MODULE = "scheduler_example_plugins"
SOURCE = Path(__file__).parent.parent / "example_plugins.py"
FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}


def plugin_dir(root: Path, entry_points: dict[str, dict[str, str]]) -> Path:
    """A directory holding the example plugin module and a dist-info that
    declares ``entry_points`` (namespace -> name -> "module:attr"), which
    is all importlib.metadata (and so stevedore) needs to find them."""
    site = root / "plugins-site"
    site.mkdir()
    shutil.copy(SOURCE, site / f"{MODULE}.py")
    info = site / f"{MODULE}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {MODULE}\nVersion: 1.0\n")
    lines = []
    for namespace, plugins in entry_points.items():
        lines.append(f"[{namespace}]")
        lines += [f"{name} = {value}" for name, value in plugins.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return site


def _env(site: Path) -> dict[str, str]:
    path = [str(site)] + [p for p in os.environ.get("PYTHONPATH",
                                                     "").split(os.pathsep)
                          if p]
    return {"PYTHONPATH": os.pathsep.join(path)}


def test_a_plugin_registered_by_entry_point_only_filters_and_weighs(
        make_deployment, tmp_path):
    site = plugin_dir(tmp_path, {
        "scheduler.filters": {
            "EvenHostsFilter": f"{MODULE}:EvenHostsFilter"},
        "scheduler.weighers": {
            "HostNameWeigher": f"{MODULE}:HostNameWeigher"}})
    deployment = make_deployment(
        filter_scheduler__enabled_filters="ComputeFilter,EvenHostsFilter,"
                                          "RamFilter",
        filter_scheduler__weighers="HostNameWeigher",
        # the plugin's own option, read from the same config file
        filter_scheduler__host_name_weight_multiplier=-1.0)
    # odd hosts are the roomy ones: without the plugin filter a big
    # flavor would land there
    deployment.add_nodes([node(f"node-{i}", memory_mb=16384 if i % 2
                               else 4096) for i in range(1, 7)])
    deployment.start_server(env=_env(site))

    # the filter keeps node-2/4/6; the weigher (multiplier -1) picks the
    # lowest number
    placed = deployment.api.select_destinations({}, {"flavor": FLAVOR})
    assert placed[0]["host"] == "node-2"

    with pytest.raises(exception.NoValidHost) as caught:
        deployment.api.select_destinations(
            {}, {"flavor": dict(FLAVOR, memory_mb=8192)})
    assert caught.value.message == (
        "No valid host: 0/6 hosts passed. EvenHostsFilter removed 3 "
        "(odd-numbered host), RamFilter removed 3 (insufficient RAM: need "
        "8192 MB)")

    ranking = deployment.api.rank_destinations({}, {"flavor": FLAVOR},
                                               limit=10)
    assert [h["host"] for h in ranking["hosts"]] == [
        "node-2", "node-4", "node-6"]
    assert set(ranking["hosts"][0]["weights"]) == {"HostNameWeigher"}
    even = ranking["filters"][1]
    assert (even["name"], even["in"], even["out"], even["reason"],
            sorted(even["sample"])) == (
        "EvenHostsFilter", 6, 3, "odd-numbered host",
        ["node-1", "node-3", "node-5"])
    assert len(deployment.allocations()) == 1


def test_a_plugin_that_fails_to_import_stops_startup_naming_it(
        make_deployment, tmp_path):
    site = plugin_dir(tmp_path, {"scheduler.filters": {
        "EvenHostsFilter": f"{MODULE}:EvenHostsFilter",
        "BrokenFilter": "scheduler_no_such_module:BrokenFilter"}})
    deployment = make_deployment(
        filter_scheduler__enabled_filters="ComputeFilter,BrokenFilter")
    proc = deployment.start_server(wait=False, env=_env(site))
    assert proc.wait(timeout=60) == 1
    log = deployment.server_log()
    assert ("ERROR: [filter_scheduler] enabled_filters: plugin "
            "'BrokenFilter' from namespace 'scheduler.filters' failed to "
            "load: No module named 'scheduler_no_such_module'") in log
    assert "Scheduler worker consuming" not in log
