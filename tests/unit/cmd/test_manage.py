"""scheduler-manage through ``main([...])`` with a config file pointing at
the test's SQLite database (the same file the ``engine`` fixture uses)."""
from __future__ import annotations

import datetime
import json

import pytest
import sqlalchemy as sa

from scheduler.admin import aggregates
from scheduler.admin import services
from scheduler.claims import consume
from scheduler.hosts.planned import Claim
from scheduler.cmd import manage
from scheduler.db import models
from tests.unit.fakes import node
from tests.unit.fakes import node_row
from tests.unit.fakes import set_node
from tests.unit.fakes import set_service

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
    consume.claim(engine, [Claim(
        consumer_uuid=consumer, node_id=row.id, host=host,
        generation=row.generation, vcpus=vcpus, memory_mb=memory_mb,
        disk_gb=disk_gb)])


def test_db_sync_and_version(config, capsys, tmp_path):
    args = config()
    # A missing file is named, not created empty.
    db_file = tmp_path / "scheduler.sqlite"
    assert _run(capsys, args + ["db", "version"]) == (
        1, "", f"ERROR: database file {db_file} does not exist; run "
               f"'scheduler-manage db sync' to create it, or point "
               f"[database] connection at the right file\n")
    assert not db_file.exists()
    assert _run(capsys, args + ["db", "sync"]) == (
        0, "database at revision 0013\n", "")
    assert (tmp_path / "scheduler.sqlite").exists()
    assert _run(capsys, args + ["db", "version"]) == (0, "0013\n", "")
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


# --- hosts --------------------------------------------------------------------

P1 = "project-1"


def _placed(engine, host, consumer, project_id, vcpus=2, memory_mb=1024,
            disk_gb=10):
    row = node_row(engine, host)
    consume.claim(engine, [Claim(
        consumer_uuid=consumer, node_id=row.id, host=host,
        generation=row.generation, vcpus=vcpus, memory_mb=memory_mb,
        disk_gb=disk_gb, project_id=project_id)])


def test_host_list(config, capsys, register, engine):
    register(node("h2", zone="az2"), node("h1"), node("h3"))
    set_service(engine, "h2", disabled=True, disabled_reason="disk")
    set_service(engine, "h3", forced_down=True)
    aggregates.create_aggregate(engine, "fast", zone="az9")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    assert _run(capsys, config() + ["host", "list"]) == (0, (
        "host  status    state  nodes  zones\n"
        "----  --------  -----  -----  --------\n"
        "h1    enabled   up     1      az1, az9\n"
        "h2    disabled  up     1      az2\n"
        "h3    enabled   down   1      az1\n"), "")


def test_host_list_uses_the_configured_down_time_and_default_zone(
        config, capsys, register, engine):
    register(node("h1"))
    aggregates.remove_aggregate_host(engine, "az1", "h1")
    set_service(engine, "h1", last_seen_up=datetime.datetime(2000, 1, 1))
    code, out, _ = _run(capsys, config() + ["host", "list"])
    assert out.splitlines()[2].split() == ["h1", "enabled", "down", "1",
                                           "nova"]
    code, out, _ = _run(capsys, config(
        scheduler={"service_down_time": 10 ** 10},
        filter_scheduler={"default_availability_zone": "dflt"})
        + ["host", "list"])
    assert out.splitlines()[2].split() == ["h1", "enabled", "up", "1",
                                           "dflt"]


def test_host_list_json(config, capsys, register, engine):
    register(node("h1"))
    code, out, err = _run(capsys, config() + ["--json", "host", "list"])
    assert (code, err) == (0, "")
    assert json.loads(out) == [
        {"host": "h1", "status": "enabled", "disabled_reason": None,
         "state": "up", "nodes": 1, "zones": ["az1"]}]


def test_host_describe(config, capsys, register, engine):
    register(node("h1", vcpus=8, memory_mb=8192, local_gb=100,
                  cpu_ratio=4.0, ram_ratio=1.5), node("h2"))
    _placed(engine, "h1", A1, P1)
    _placed(engine, "h1", A2, None, vcpus=1, memory_mb=512, disk_gb=5)
    aggregates.create_aggregate(engine, "fast", zone="az9")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    aggregates.set_aggregate_metadata(engine, "fast", {"ssd": "true"})
    set_service(engine, "h1", disabled=True, disabled_reason="broken disk")
    code, out, err = _run(capsys, config() + ["host", "describe", "h1"])
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "host:   h1",
        "status: disabled (broken disk)",
        "state:  up",
        "zones:  az1, az9",
        "",
        "aggregates:",
        "name  metadata",
        "----  -------------------------------",
        "az1   availability_zone=az1",
        "fast  availability_zone=az9, ssd=true",
        "",
        "node h1:",
        "resource   total  ratio  capacity  used",
        "---------  -----  -----  --------  ----",
        "vcpus      8      4.0    32.0      3",
        "memory_mb  8192   1.5    12288.0   1536",
        "disk_gb    100    1.0    100.0     15",
        "",
        "usage by project on h1:",
        "project_id  instances  moving  vcpus  memory_mb  disk_gb",
        "----------  ---------  ------  -----  ---------  -------",
        "project-1   1          0       2      1024       10",
        "(none)      1          0       1      512        5"]


def test_host_describe_without_allocations_or_aggregates(config, capsys,
                                                         register, engine):
    register(node("h1"))
    aggregates.remove_aggregate_host(engine, "az1", "h1")
    code, out, _ = _run(capsys, config() + ["host", "describe", "h1"])
    assert code == 0
    lines = out.splitlines()
    assert lines[3:7] == ["zones:  nova", "", "aggregates:", "(none)"]
    assert lines[-2:] == ["usage by project on h1:", "(no allocations)"]
    set_node(engine, "h1", deleted=node_row(engine, "h1").id)
    code, out, _ = _run(capsys, config() + ["host", "describe", "h1"])
    assert out.splitlines()[-1] == "nodes: (none)"


def test_host_describe_json(config, capsys, register, engine):
    register(node("h1", vcpus=8, cpu_ratio=2.0))
    _placed(engine, "h1", A1, P1)
    code, out, err = _run(capsys, config() + ["--json", "host", "describe",
                                              "h1"])
    assert (code, err) == (0, "")
    host = json.loads(out)
    assert host["host"] == "h1"
    assert host["aggregates"] == [
        {"name": "az1", "metadata": {"availability_zone": "az1"}}]
    [n] = host["nodes"]
    assert n["resources"][0] == {"resource": "vcpus", "total": 8,
                                 "ratio": 2.0, "capacity": 16.0, "used": 2}
    assert n["projects"] == [{"project_id": P1, "instances": 1, "moving": 0,
                              "vcpus": 2, "memory_mb": 1024, "disk_gb": 10}]


def test_host_describe_unknown_host(config, capsys, register, engine):
    register(node("h1"))
    assert _run(capsys, config() + ["host", "describe", "nope"]) == (
        1, "", "ERROR: no compute host 'nope'\n")
    assert _run(capsys, config() + ["--json", "host", "describe",
                                    "nope"]) == (
        1, "", "ERROR: no compute host 'nope'\n")


def test_service_and_node_list_json(config, capsys, register, engine):
    register(node("h1"))
    code, out, _ = _run(capsys, config() + ["--json", "service", "list"])
    [service] = json.loads(out)
    assert (service["host"], service["status"], service["state"]) == (
        "h1", "enabled", "up")
    code, out, _ = _run(capsys, config() + ["--json", "node", "list"])
    [n] = json.loads(out)
    assert (n["host"], n["vcpus"]) == ("h1", 8)


# --- aggregates ---------------------------------------------------------------

def test_aggregate_lifecycle(config, capsys, register, engine):
    register(node("h1"), node("h2"))
    args = config()
    assert _run(capsys, args + ["aggregate", "create", "fast", "--zone",
                                "az9"]) == (
        0, "created aggregate fast in zone az9\n", "")
    assert _run(capsys, args + ["aggregate", "create", "plain"]) == (
        0, "created aggregate plain\n", "")
    assert _run(capsys, args + ["aggregate", "add-host", "fast", "h1"]) == (
        0, "added h1 to aggregate fast\n", "")
    assert _run(capsys, args + ["aggregate", "add-host", "fast", "h2"]) == (
        0, "added h2 to aggregate fast\n", "")
    assert _run(capsys, args + ["aggregate", "set-metadata", "fast",
                                "ssd=true", "note=a=b"]) == (
        0, "aggregate fast metadata: availability_zone=az9, note=a=b, "
        "ssd=true\n", "")
    assert _run(capsys, args + ["aggregate", "set-metadata", "fast",
                                "note="]) == (
        0, "aggregate fast metadata: availability_zone=az9, ssd=true\n", "")
    assert _run(capsys, args + ["aggregate", "list"]) == (0, (
        "name   hosts  metadata\n"
        "-----  -----  -------------------------------\n"
        "az1    2      availability_zone=az1\n"
        "az2    0      availability_zone=az2\n"
        "az3    0      availability_zone=az3\n"
        "fast   2      availability_zone=az9, ssd=true\n"
        "plain  0\n"), "")
    assert _run(capsys, args + ["aggregate", "remove-host", "fast",
                                "h2"]) == (
        0, "removed h2 from aggregate fast\n", "")
    assert _run(capsys, args + ["aggregate", "delete", "plain"]) == (
        0, "deleted aggregate plain\n", "")
    assert _run(capsys, args + ["aggregate", "delete", "fast"]) == (
        1, "", "ERROR: aggregate 'fast' still has 1 host(s): h1; remove "
        "them first or use --force\n")
    assert _run(capsys, args + ["aggregate", "delete", "fast",
                                "--force"]) == (
        0, "deleted aggregate fast (removed 1 host(s))\n", "")
    code, out, _ = _run(capsys, args + ["aggregate", "list"])
    assert [line.split()[0] for line in out.splitlines()[2:]] == [
        "az1", "az2", "az3"]


def test_aggregate_list_json(config, capsys, register, engine):
    register(node("h1"))
    aggregates.create_aggregate(engine, "fast", zone="az9")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    code, out, err = _run(capsys, config() + ["--json", "aggregate",
                                              "list"])
    assert (code, err) == (0, "")
    fast = {a["name"]: a for a in json.loads(out)}["fast"]
    assert (fast["hosts"], fast["metadata"]) == (
        ["h1"], {"availability_zone": "az9"})
    assert set(fast) == {"id", "uuid", "name", "hosts", "metadata"}


@pytest.mark.parametrize("argv, message", [
    (["create", "az1"], "aggregate 'az1' already exists"),
    (["create", ""], "aggregate name must not be empty"),
    (["create", "x", "--zone", ""], "availability zone must not be empty"),
    (["delete", "nope"], "no aggregate 'nope'"),
    (["delete", "nope", "--force"], "no aggregate 'nope'"),
    (["add-host", "nope", "h1"], "no aggregate 'nope'"),
    (["add-host", "az2", "nope"], "no compute host 'nope'"),
    (["add-host", "az1", "h1"], "host 'h1' is already in aggregate 'az1'"),
    (["remove-host", "nope", "h1"], "no aggregate 'nope'"),
    (["remove-host", "az2", "h1"], "host 'h1' is not in aggregate 'az2'"),
    (["set-metadata", "nope", "a=b"], "no aggregate 'nope'"),
    (["set-metadata", "az1", "k=" + "v" * 256],
     "value of metadata key 'k' is longer than 255 characters"),
])
def test_aggregate_errors(config, capsys, register, engine, argv, message):
    register(node("h1"))
    before = aggregates.list_aggregates(engine)
    assert _run(capsys, config() + ["aggregate", *argv]) == (
        1, "", f"ERROR: {message}\n")
    assert aggregates.list_aggregates(engine) == before


#: What ``$'bad\xffbyte'`` in argv is to Python (surrogateescape).
BAD_BYTE = b"bad\xffbyte".decode("utf-8", "surrogateescape")
NOT_UTF8 = r"'bad\xffbyte': not valid UTF-8 (byte \xff); give it as " \
    r"UTF-8 text"
CONTROL = r"holds a control character (\x1b); names and values must be " \
    r"printable text"


@pytest.mark.parametrize("argv, message", [
    (["aggregate", "create", BAD_BYTE], f"aggregate name {NOT_UTF8}"),
    (["aggregate", "create", "x", "--zone", BAD_BYTE],
     f"availability zone {NOT_UTF8}"),
    (["aggregate", "delete", BAD_BYTE], f"aggregate name {NOT_UTF8}"),
    (["aggregate", "add-host", "agg", BAD_BYTE], f"host {NOT_UTF8}"),
    (["aggregate", "remove-host", BAD_BYTE, "h1"],
     f"aggregate name {NOT_UTF8}"),
    (["aggregate", "set-metadata", "agg", f"{BAD_BYTE}=v"],
     f"metadata key {NOT_UTF8}"),
    (["aggregate", "set-metadata", "agg", f"{BAD_BYTE}="],
     f"metadata key {NOT_UTF8}"),
    (["aggregate", "set-metadata", "agg", f"k={BAD_BYTE}"],
     f"value of metadata key 'k' {NOT_UTF8}"),
    (["service", "disable", BAD_BYTE], f"host {NOT_UTF8}"),
    (["service", "enable", BAD_BYTE], f"host {NOT_UTF8}"),
    (["service", "disable", "h1", "--reason", BAD_BYTE],
     f"disabled reason {NOT_UTF8}"),
    (["host", "describe", BAD_BYTE], f"host {NOT_UTF8}"),
    (["aggregate", "create", "nul\x00"],
     r"aggregate name 'nul\x00': holds a NUL character (\x00), which no "
     r"database column can store"),
    (["aggregate", "create", "esc\x1b[2J"],
     rf"aggregate name 'esc\x1b[2J': {CONTROL}"),
    (["aggregate", "set-metadata", "agg", "k\x1b=v"],
     rf"metadata key 'k\x1b': {CONTROL}"),
    (["aggregate", "set-metadata", "agg", "k=v\x1b"],
     rf"value of metadata key 'k' 'v\x1b': {CONTROL}"),
    (["service", "disable", "h1", "--reason", "r\x1b"],
     rf"disabled reason 'r\x1b': {CONTROL}"),
])
def test_text_that_is_not_printable_is_one_line_naming_it(
        config, capsys, register, engine, argv, message):
    """Bytes that are not UTF-8 (argv's lone surrogates), a NUL or a
    control character: refused before the database sees them, naming the
    argument, rather than a driver's error naming neither."""
    register(node("h1"))
    aggregates.create_aggregate(engine, "agg")
    def state():
        return aggregates.list_aggregates(engine), [
            (s["host"], s["disabled"], s["disabled_reason"])
            for s in services.list_services(engine)]
    before = state()
    assert _run(capsys, config() + argv) == (1, "", f"ERROR: {message}\n")
    assert state() == before


def test_control_characters_stored_by_another_tool_are_shown_escaped(
        config, capsys, register, engine):
    """Rows written past these checks (another tool, an older release)
    print escaped, and can still be named to be removed."""
    register(node("h1"))
    with engine.begin() as conn:
        conn.execute(models.aggregates.insert().values(
            uuid=A1, name="red\x1b[31m", deleted=0))
        conn.execute(models.services.update().values(
            disabled=True, disabled_reason="disk\nbroken"))
    code, out, err = _run(capsys, config() + ["aggregate", "list"])
    assert (code, err) == (0, "")
    assert r"red\x1b[31m  0" in out.splitlines()
    code, out, err = _run(capsys, config() + ["service", "list"])
    assert out.splitlines()[2].endswith(r"disk\nbroken")
    code, out, err = _run(capsys, config() + ["host", "describe", "h1"])
    assert (code, err) == (0, "")
    assert r"status: disabled (disk\nbroken)" in out.splitlines()
    assert "\x1b" not in out
    assert _run(capsys, config() + ["aggregate", "delete",
                                    "red\x1b[31m"]) == (
        0, "deleted aggregate red\\x1b[31m\n", "")


@pytest.mark.parametrize("argv", [
    ["set-metadata", "az1"], ["set-metadata", "az1", "novalue"],
    ["set-metadata", "az1", "=v"], ["add-host", "az1"], ["create"],
    ["rename", "a", "b"]])
def test_aggregate_usage_errors(config, capsys, engine, argv):
    with pytest.raises(SystemExit) as info:
        manage.main(config() + ["aggregate", *argv])
    assert info.value.code == 2
    assert "usage: scheduler-manage aggregate" in capsys.readouterr().err


def test_writes_retry_a_locked_database(config, capsys, register, engine,
                                        monkeypatch):
    """A transient error (SQLite busy) is retried like the service does."""
    register(node("h1"))
    real = aggregates.create_aggregate
    calls = []

    def flaky(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise sa.exc.OperationalError(
                "INSERT", {}, Exception("database is locked"))
        return real(*args, **kwargs)
    monkeypatch.setattr(aggregates, "create_aggregate", flaky)
    assert _run(capsys, config() + ["aggregate", "create", "fast"]) == (
        0, "created aggregate fast\n", "")
    assert len(calls) == 2


def test_json_after_the_command_on_every_write(config, capsys, register):
    import json
    register(node("h1"))
    args = config()
    steps = [
        (["service", "disable", "h1", "--reason", "rack", "--json"],
         {"host": "h1", "disabled": True, "reason": "rack"}),
        (["service", "enable", "h1", "--json"],
         {"host": "h1", "disabled": False}),
        (["aggregate", "create", "agg", "--zone", "az9", "--json"],
         {"name": "agg", "zone": "az9"}),
        (["aggregate", "add-host", "agg", "h1", "--json"],
         {"name": "agg", "added": "h1"}),
        (["aggregate", "set-metadata", "agg", "k=v", "--json"],
         {"name": "agg", "metadata": {"availability_zone": "az9",
                                      "k": "v"}}),
        (["aggregate", "remove-host", "agg", "h1", "--json"],
         {"name": "agg", "removed": "h1"}),
        (["--json", "aggregate", "delete", "agg"],
         {"name": "agg", "removed_hosts": []}),
    ]
    for argv, expected in steps:
        code, out, err = _run(capsys, args + argv)
        assert (code, err) == (0, ""), argv
        assert json.loads(out) == expected, argv


def test_service_disable_refuses_an_overlong_reason(config, capsys,
                                                         register, engine):
    """disabled_reason is VARCHAR(255): like every other text admin
    writes, a longer one is one line naming it, and nothing is written
    (SQLite stores it silently; MariaDB/PostgreSQL fail with 'database
    ... failed: data too long ...; check [database] connection')."""
    register(node("h1"))
    assert _run(capsys, config() + ["service", "disable", "h1", "--reason",
                                    "r" * 256]) == (
        1, "", "ERROR: disabled reason is longer than 255 characters\n")
    assert services.list_services(engine)[0]["disabled"] is False


@pytest.mark.parametrize("name", ["gpu,ssd", " gpu", "gpu "])
def test_aggregate_create_refuses_a_name_no_request_can_name(
        config, capsys, register, engine, name):
    """requested_destination.aggregates (--aggregate) splits on commas and
    strips blanks, so such an aggregate could never be asked for by name."""
    from tests.unit.fakes import make_spec
    spec = make_spec(requested_destination={"aggregates": [name]})
    assert name not in spec.required_aggregates()[0]
    code, out, err = _run(capsys, config() + ["aggregate", "create", name])
    assert (code, out) == (1, ""), err
    assert name not in {a["name"] for a in aggregates.list_aggregates(engine)}


def test_audit_does_not_flag_vcpus_on_a_node_reporting_none(
        config, capsys, register, engine):
    """A node reporting 0 vCPUs is not judged on vCPUs (capacity.fits,
    the claim's SQL: nova's CoreFilter); the audit, which "judges capacity
    by the same rule", called it over capacity and exited 1, even --fix."""
    register(node("h1"))
    set_node(engine, "h1", vcpus=0)
    _claim(engine, "h1", A1, vcpus=2)      # the claim accepts it
    assert _run(capsys, config() + ["allocations", "audit"]) == (
        0, CLEAN, "")
    assert _run(capsys, config() + ["allocations", "audit", "--fix"]) == (
        0, CLEAN, "")
