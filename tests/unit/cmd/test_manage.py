"""scheduler-manage through ``main([...])`` with a config file pointing at
the test's SQLite database (the same file the ``engine`` fixture uses)."""
from __future__ import annotations

import pytest

from scheduler import claims
from scheduler.cmd import manage
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node

A1 = "34343434-0000-4000-8000-000000000001"
A2 = "34343434-0000-4000-8000-000000000002"

CLEAN = ("audit: usage equals allocations on every node; no node is over "
         "capacity\n")
HEADER = "host  node  resource  problem         used  allocated  capacity"


@pytest.fixture
def config(tmp_path):
    """``--config-file`` arguments: [DEFAULT] state_path = tmp_path."""
    def _config(**sections):
        lines = ["[DEFAULT]", f"state_path = {tmp_path}"]
        for section, values in sections.items():
            lines.append(f"[{section}]")
            lines += [f"{k} = {v}" for k, v in values.items()]
        path = tmp_path / "scheduler.conf"
        path.write_text("\n".join(lines) + "\n")
        return ["--config-file", str(path)]
    return _config


def _run(capsys, argv):
    code = manage.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _claim(engine, host, consumer, vcpus=2, memory_mb=1024, disk_gb=10):
    row = node_row(engine, host)
    claims.claim(engine, [claims.Claim(
        consumer_uuid=consumer, node_id=row.id, host=host,
        generation=row.generation, vcpus=vcpus, memory_mb=memory_mb,
        disk_gb=disk_gb)])


def test_db_sync_and_version(config, capsys, tmp_path):
    args = config()
    assert _run(capsys, args + ["db", "version"]) == (
        0, "none (run 'db sync')\n", "")
    assert _run(capsys, args + ["db", "sync"]) == (
        0, "database at revision 0004\n", "")
    assert (tmp_path / "scheduler.sqlite").exists()
    assert _run(capsys, args + ["db", "version"]) == (0, "0004\n", "")
    # re-running sync is safe
    assert _run(capsys, args + ["db", "sync"])[0] == 0


def test_audit_balanced(config, capsys, register, engine):
    register(node("h1"), node("h2"))
    _claim(engine, "h1", A1)
    assert _run(capsys, config() + ["allocations", "audit"]) == (
        0, CLEAN, "")


def test_audit_empty_database(config, capsys, engine):
    assert _run(capsys, config() + ["allocations", "audit"]) == (
        0, CLEAN, "")


def test_audit_reports_usage_off_and_exits_1(config, capsys, register,
                                             engine):
    register(node("h1", cpu_ratio=2.0), node("h2"))
    _claim(engine, "h1", A1)
    set_node(engine, "h1", vcpus_used=5)
    code, out, err = _run(capsys, config() + ["allocations", "audit"])
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        HEADER,
        "----  ----  --------  --------------  ----  ---------  --------",
        "h1    h1    vcpus     usage mismatch  5     2          16.0"]
    # audit alone changes nothing
    assert node_row(engine, "h1").vcpus_used == 5


def test_audit_fix_repairs(config, capsys, register, engine):
    register(node("h1"), node("h2"))
    _claim(engine, "h1", A1)
    _claim(engine, "h2", A2)
    set_node(engine, "h1", vcpus_used=5)
    set_node(engine, "h2", memory_mb_used=0)
    generation = node_row(engine, "h1").generation
    code, out, err = _run(capsys, config() + ["allocations", "audit",
                                              "--fix"])
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == HEADER.split()
    assert [line.split()[:4] for line in lines[2:4]] == [
        ["h1", "h1", "vcpus", "usage"], ["h2", "h2", "memory_mb", "usage"]]
    assert lines[4:] == [
        "audit: recomputed usage from allocations on 2 node(s)"]
    row = node_row(engine, "h1")
    assert (row.vcpus_used, row.generation) == (2, generation + 1)
    assert node_row(engine, "h2").memory_mb_used == 1024
    assert _run(capsys, config() + ["allocations", "audit"]) == (
        0, CLEAN, "")


def test_audit_uses_the_configured_default_ratios(config, capsys, register,
                                                  engine):
    register(node("h1", vcpus=4))
    set_node(engine, "h1", cpu_allocation_ratio=None)
    _claim(engine, "h1", A1, vcpus=6)
    # the default [filter_scheduler] cpu_allocation_ratio is 16.0
    assert _run(capsys, config() + ["allocations", "audit"]) == (
        0, CLEAN, "")
    code, out, _ = _run(capsys, config(
        filter_scheduler={"cpu_allocation_ratio": "1.0"})
        + ["allocations", "audit"])
    assert code == 1
    assert out.splitlines()[2].split() == [
        "h1", "h1", "vcpus", "over", "capacity", "6", "6", "4.0"]
    # --fix only recomputes usage; over capacity is not something it
    # fixes, so it still exits 1
    code, out, _ = _run(capsys, config(
        filter_scheduler={"cpu_allocation_ratio": "1.0"})
        + ["allocations", "audit", "--fix"])
    assert code == 1
    assert out.splitlines()[-1] == (
        "audit: recomputed usage from allocations on 0 node(s)")


def test_service_disable_unknown_host(config, capsys, register, engine):
    register(node("h1"))
    code, out, err = _run(capsys, config() + ["service", "disable", "nope",
                                              "--reason", "x"])
    assert (code, out) == (1, "")
    assert err == "ERROR: no compute service on host 'nope'\n"
    code, out, err = _run(capsys, config() + ["service", "enable", "nope"])
    assert code == 1 and err.startswith("ERROR: ")


def test_service_disable_and_enable(config, capsys, register, engine):
    register(node("h1"))
    assert _run(capsys, config() + ["service", "disable", "h1", "--reason",
                                    "broken disk"]) == (0, "disabled h1\n",
                                                        "")
    code, out, _ = _run(capsys, config() + ["service", "list"])
    assert code == 0
    assert out.splitlines()[2].split() == [
        "h1", "nova-compute", "disabled", "up", "broken", "disk"]
    assert _run(capsys, config() + ["service", "enable", "h1"]) == (
        0, "enabled h1\n", "")


def test_a_missing_subcommand_is_a_usage_error(config, capsys):
    with pytest.raises(SystemExit) as info:
        manage.main(config() + ["allocations"])
    assert info.value.code == 2
    assert "usage: scheduler-manage" in capsys.readouterr().err
