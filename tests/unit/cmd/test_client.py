"""scheduler-client: commands run end to end (the call, its table, its
errors), against a fake API object (no broker)."""
from __future__ import annotations

import json
import sys
from typing import Any

import oslo_messaging as messaging
from oslo_messaging._drivers import common as rpc_common
import pytest

from scheduler.cmd import logs
from scheduler.cmd import parsing
from scheduler import exception
from scheduler.cmd import client
from scheduler.cmd import client_output
from scheduler.cmd import client_parser
from scheduler.cmd import client_request

#: Before the autouse fixture below replaces it, for the one test of it.
REAL_SETUP_LOGGING = client.setup_logging

UUID1 = "0b0a2d4e-7b0c-4a43-9e8f-1f6d1d0b6c01"
UUID2 = "0b0a2d4e-7b0c-4a43-9e8f-1f6d1d0b6c02"

SELECTED = [
    {"host": "compute-00001", "nodename": "compute-00001", "uuid": UUID1,
     "limits": {"memory_mb": 12288.0},
     "allocation": {"compute_node_uuid": "n1", "vcpus": 2,
                    "memory_mb": 2048, "disk_gb": 21}},
    {"host": "compute-00002", "nodename": "node-2", "uuid": UUID2,
     "limits": {},
     "allocation": {"compute_node_uuid": "n2", "vcpus": 2,
                    "memory_mb": 2048, "disk_gb": 21}},
]

RANKED = {
    "hosts": [
        {"host": "compute-00007", "nodename": "compute-00007",
         "weight": 1.5, "weights": {"RAMWeigher": 1.0, "CPUWeigher": 0.5}},
        {"host": "compute-00003", "nodename": "compute-00003",
         "weight": 0.25, "weights": {"RAMWeigher": 0.25,
                                     "CPUWeigher": 0.0}},
    ],
    "filters": [
        {"name": "ComputeFilter", "in": 10, "out": 9,
         "reason": "service down or disabled", "sample": ["compute-00009"]},
        {"name": "RamFilter", "in": 9, "out": 2,
         "reason": "insufficient RAM",
         "sample": ["compute-00001", "compute-00002"]},
    ],
    "total": 10,
}


class FakeAPI:
    """Records each call; returns ``results[method]`` or raises ``error``."""

    def __init__(self, results: dict[str, Any] | None = None,
                 error: BaseException | None = None):
        self.results = {"select_destinations": SELECTED,
                        "rank_destinations": RANKED, "release": 2,
                        "ping": {"host": "sched-1", "version": "1.1",
                                 "driver": "filter_scheduler"},
                        **(results or {})}
        self.error = error
        self.calls: list[tuple[str, tuple, dict]] = []
        self.conf = None

    def _answer(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((method, args, kwargs))
        if self.error is not None:
            raise self.error
        return self.results[method]

    def select_destinations(self, ctxt, spec):
        return self._answer("select_destinations", ctxt, spec)

    def rank_destinations(self, ctxt, spec, limit=20):
        return self._answer("rank_destinations", ctxt, spec, limit=limit)

    def release(self, ctxt, consumer_uuids):
        return self._answer("release", ctxt, consumer_uuids)

    def ping(self, ctxt, server=None):
        return self._answer("ping", ctxt, server=server)


@pytest.fixture(autouse=True)
def no_logging_setup(monkeypatch) -> list[bool]:
    """Keep main() from reconfiguring the process's logging; records the
    ``debug`` it was asked for."""
    seen: list[bool] = []
    monkeypatch.setattr(client, "setup_logging",
                        lambda conf, debug: seen.append(debug))
    return seen


def run(argv: list[str], api: FakeAPI | None = None,
        ) -> tuple[int, FakeAPI]:
    api = api or FakeAPI()

    def factory(conf):
        api.conf = conf
        return api
    return client.main(argv, api_factory=factory), api


def spec_of(*argv: str) -> dict[str, Any]:
    return client_request.build_spec(
        client_parser.parse_args(["select", *argv]))


def remote(exc: Exception) -> Exception:
    """``exc`` as the RPC client re-raises it: a ``<Class>_Remote``
    subclass whose str() carries the server's traceback."""
    try:
        raise exc
    except Exception:
        data = rpc_common.serialize_remote_exception(sys.exc_info())
    return rpc_common.deserialize_remote_exception(
        data, ["scheduler.exception"])


@pytest.mark.parametrize("flag", ["--hint", "--extra-spec",
                                  "--image-property"])
@pytest.mark.parametrize("value", ["foo", "=bar"])
def test_key_value_flags_need_a_key_and_equals(capsys, flag, value):
    with pytest.raises(SystemExit) as e:
        client.main(["select", flag, value], api_factory=FakeAPI)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: scheduler-client select")
    assert f"argument {flag}: expected key=value, got {value!r}" in err


# -- commands and their tables ----------------------------------------------

def test_select_calls_the_api_with_the_spec_and_prints_a_table(capsys):
    rc, api = run(["select", "--memory-mb", "2048", "--vcpus", "2",
                   "--num-instances", "2"])
    assert rc == 0
    [(method, (ctxt, spec), kwargs)] = api.calls
    assert method == "select_destinations" and ctxt == {}
    assert spec == spec_of("--memory-mb", "2048", "--vcpus", "2",
                           "--num-instances", "2")
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "uuid                                  host           nodename"
        "       vcpus  memory_mb  disk_gb",
        "------------------------------------  -------------  -------------"
        "  -----  ---------  -------",
        f"{UUID1}  compute-00001  compute-00001  2      2048       21",
        f"{UUID2}  compute-00002  node-2         2      2048       21",
    ]


def test_select_table_has_alternates_when_returned(capsys):
    result = [dict(SELECTED[0], alternates=[
        {"host": "compute-00005", "nodename": "compute-00005", "limits": {}},
        {"host": "compute-00009", "nodename": "compute-00009", "limits": {}},
    ])]
    rc, _ = run(["select", "--return-alternates"],
                FakeAPI({"select_destinations": result}))
    assert rc == 0
    header, _, row = capsys.readouterr().out.splitlines()
    assert header.split() == client_output.SELECT_COLUMNS + ["alternates"]
    assert row.endswith("compute-00005, compute-00009")


def test_rank_prints_hosts_with_weigher_columns_then_filters(capsys):
    rc, api = run(["rank", "--memory-mb", "4096", "--limit", "5"])
    assert rc == 0
    [(method, (ctxt, spec), kwargs)] = api.calls
    assert method == "rank_destinations"
    assert kwargs == {"limit": 5}
    assert spec["flavor"]["memory_mb"] == 4096
    assert capsys.readouterr().out.splitlines() == [
        "host           nodename       weight  RAMWeigher  CPUWeigher",
        "-------------  -------------  ------  ----------  ----------",
        "compute-00007  compute-00007  1.500   1.000       0.500",
        "compute-00003  compute-00003  0.250   0.250       0.000",
        "2 shown of 10 hosts",
        "",
        # "passed", not "out": the hosts that passed the filter.
        "name           in  passed  reason                    sample",
        "-------------  --  ------  ------------------------  "
        "----------------------------",
        "ComputeFilter  10  9       service down or disabled  compute-00009",
        "RamFilter      9   2       insufficient RAM          "
        "compute-00001, compute-00002",
    ]


def test_rank_default_limit_is_20():
    _, api = run(["rank"])
    assert api.calls[0][2] == {"limit": 20}


def test_rank_with_no_hosts_still_prints_both_tables(capsys):
    rc, _ = run(["rank"], FakeAPI({"rank_destinations": {
        "hosts": [], "filters": RANKED["filters"][:1]}}))
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["host", "nodename", "weight"]
    assert lines[3].split() == client_output.FILTER_COLUMNS
    assert lines[5].startswith("ComputeFilter")


def test_release_prints_the_count(capsys):
    rc, api = run(["release", UUID1, UUID2])
    assert rc == 0
    assert api.calls == [("release", ({}, [UUID1, UUID2]), {})]
    assert capsys.readouterr().out == "released 2\n"


def test_release_needs_a_uuid(capsys):
    with pytest.raises(SystemExit) as e:
        run(["release"])
    assert e.value.code == 2


def test_ping_prints_host_version_driver(capsys):
    rc, api = run(["ping"])
    assert rc == 0
    assert api.calls == [("ping", ({},), {"server": None})]
    assert capsys.readouterr().out.splitlines() == [
        "host     version  driver",
        "-------  -------  ----------------",
        "sched-1  1.1      filter_scheduler",
    ]


def test_ping_a_named_server():
    _, api = run(["ping", "--server", "sched-2"])
    assert api.calls == [("ping", ({},), {"server": "sched-2"})]


@pytest.mark.parametrize("argv, method", [
    (["select"], "select_destinations"),
    (["rank"], "rank_destinations"),
    (["release", UUID1], "release"),
    (["ping"], "ping"),
])
def test_json_prints_the_raw_result(capsys, argv, method):
    api = FakeAPI()
    rc, _ = run(["--json", *argv], api)
    assert rc == 0
    assert json.loads(capsys.readouterr().out) == api.results[method]


# -- errors -----------------------------------------------------------------

NO_VALID_HOST = ("No valid host: 0/1000 hosts passed. RamFilter removed 620 "
                 "(insufficient RAM), ComputeFilter removed 380 (service "
                 "down or disabled)")


@pytest.mark.parametrize("make", [lambda e: e, remote],
                         ids=["local", "remote"])
def test_no_valid_host_is_one_error_line(capsys, make):
    rc, _ = run(["select"], FakeAPI(error=make(
        exception.NoValidHost(NO_VALID_HOST))))
    assert rc == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"ERROR: {NO_VALID_HOST}\n"


@pytest.mark.parametrize("make", [lambda e: e, remote],
                         ids=["local", "remote"])
def test_invalid_request_is_one_error_line(capsys, make):
    message = "spec.flavor.memory_mb: -1 is less than the minimum of 0"
    rc, _ = run(["rank", "--memory-mb", "-1"],
                FakeAPI(error=make(exception.InvalidRequest(message))))
    assert rc == 1
    assert capsys.readouterr().err == f"ERROR: {message}\n"


def test_messaging_timeout_names_the_topic_and_the_wait(capsys):
    rc, api = run(["--timeout", "2.5", "ping"],
                  FakeAPI(error=messaging.MessagingTimeout("timed out")))
    assert rc == 1
    err = capsys.readouterr().err
    topic = api.conf.scheduler.topic
    assert err.startswith(
        f"ERROR: no scheduler answered within 2.5s on topic '{topic}'")
    assert err.count("\n") == 1


def test_messaging_timeout_of_select_mentions_the_attempts(capsys):
    rc, api = run(["--timeout", "5", "select"],
                  FakeAPI(error=messaging.MessagingTimeout("timed out")))
    assert rc == 1
    assert capsys.readouterr().err == (
        f"ERROR: no scheduler answered within 5s "
        f"({api.conf.scheduler.max_attempts} attempts) on topic "
        f"'scheduler'; is a scheduler-server running on the same "
        f"transport_url?\n")


def test_unexpected_error_without_debug_has_no_traceback(capsys,
                                                         no_logging_setup):
    rc, _ = run(["ping"], FakeAPI(error=RuntimeError("boom")))
    assert rc == 1
    assert capsys.readouterr().err == "ERROR: RuntimeError: boom\n"
    assert no_logging_setup == [False]


def test_unexpected_error_with_debug_prints_the_traceback(capsys,
                                                          no_logging_setup):
    rc, _ = run(["--debug", "ping"], FakeAPI(error=RuntimeError("boom")))
    assert rc == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith("RuntimeError: boom\nERROR: RuntimeError: boom\n")
    assert no_logging_setup == [True]


def test_remote_error_shows_the_server_side_exception(capsys):
    error = messaging.RemoteError("KeyError", "'x'", "Traceback ...\n")
    rc, _ = run(["ping"], FakeAPI(error=error))
    assert rc == 1
    assert capsys.readouterr().err == (
        "ERROR: the scheduler failed: KeyError: 'x'\n")


def test_missing_config_file_is_an_error(capsys, tmp_path):
    rc, api = run(["--config-file", str(tmp_path / "nope.conf"), "ping"])
    assert rc == 1
    assert api.calls == []
    err = capsys.readouterr().err
    assert err.startswith("ERROR: ") and "nope.conf" in err


def test_bad_timeout_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        run(["--timeout", "0", "ping"])
    assert e.value.code == 2


# -- options ----------------------------------------------------------------

def test_timings_go_to_stderr_also_on_failure(capsys):
    rc, _ = run(["--timings", "ping"])
    assert rc == 0
    out, err = capsys.readouterr()
    assert out.startswith("host")
    assert err.startswith("ping: ") and err.endswith(" ms\n")
    rc, _ = run(["--timings", "release", UUID1],
                FakeAPI(error=exception.InvalidRequest("bad")))
    assert rc == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("release: ") and lines[0].endswith(" ms")
    assert lines[1] == "ERROR: bad"


@pytest.mark.parametrize("argv, budget", [
    (["--timeout", "7", "ping"], 7.0),
    (["ping"], client_parser.PING_TIMEOUT),
    (["select"], client_parser.CALL_TIMEOUT),
    (["rank"], client_parser.CALL_TIMEOUT),
    (["release", UUID1], client_parser.CALL_TIMEOUT),
])
def test_the_broker_and_the_calls_share_one_budget(monkeypatch, argv,
                                                   budget):
    """The broker is asked within --timeout (a person's default: 10 s for
    ping, 30 s for the others, not rpc_response_timeout's 60), and the
    calls end by the same deadline."""
    made = []

    class Recorder(FakeAPI):
        def __init__(self, conf, deadline=None):
            super().__init__()
            made.append((conf, deadline))

    monkeypatch.setattr(client, "SchedulerAPI", Recorder)
    checked = []
    monkeypatch.setattr(client.broker, "check",
                        lambda conf, budget: checked.append(
                            (budget, client.time.monotonic())))
    assert client.main(argv) == 0
    [(conf, deadline)] = made
    [(given, asked_at)] = checked
    assert given == budget
    assert asked_at <= deadline <= asked_at + budget
    assert conf.scheduler.topic == "scheduler"


def test_a_resent_call_is_quiet_unless_debug(monkeypatch):
    """The re-send WARNINGs of SchedulerAPI do not precede the command's
    one line (which counts the attempts); --debug shows them."""
    import logging
    monkeypatch.setattr(logs, "setup_logging", lambda conf, debug, name:
                        None)
    logger = logging.getLogger("scheduler.rpc.client")
    before = logger.level
    try:
        REAL_SETUP_LOGGING(None, False)
        assert not logger.isEnabledFor(logging.WARNING)
        REAL_SETUP_LOGGING(None, True)
        assert logger.isEnabledFor(logging.WARNING)
    finally:
        logger.setLevel(before)


def test_the_transport_is_cleaned_up():
    class Transport:
        cleaned = 0

        def cleanup(self):
            self.cleaned += 1

    api = FakeAPI(error=exception.NoValidHost("No valid host: none"))
    api.transport = Transport()
    rc, _ = run(["select"], api)
    assert rc == 1
    assert api.transport.cleaned == 1


def test_setup_logging_debug_to_stderr(monkeypatch):
    seen = []
    monkeypatch.setattr(logs.logging, "setup",
                        lambda conf, name: seen.append(
                            (conf.debug, conf.use_stderr, name)))
    conf = parsing.conf_from_args(client_parser.parse_args(["ping"]))
    REAL_SETUP_LOGGING(conf, True)
    assert seen == [(True, True, "scheduler-client")]


# -- stack ------------------------------------------------------------------

STACK_RESULT = {
    "stack_id": "5a0b0c0d-0000-4000-8000-0000000000e1",
    "order": [["net"], ["db"], ["web1", "web2"]],
    "resources": {"db": [SELECTED[0]], "web1": [SELECTED[1]]},
}


class FakeStackAPI(FakeAPI):
    def select_stack(self, ctxt, stack):
        return self._answer("select_stack", ctxt, stack)

    def rank_stack(self, ctxt, stack):
        return self._answer("rank_stack", ctxt, stack)

    def release_stack(self, ctxt, stack_id):
        return self._answer("release_stack", ctxt, stack_id)


TEMPLATE = """heat_template_version: 2018-08-31
resources:
  web:
    type: OS::Nova::Server
    properties: {flavor: m1.small}
"""


def test_stack_place_sends_the_template_and_prints_order_then_hosts(
        tmp_path, capsys):
    path = tmp_path / "shop.yaml"
    path.write_text(TEMPLATE)
    api = FakeStackAPI({"select_stack": STACK_RESULT})
    code, api = run(["stack", "place", str(path)], api)
    assert code == 0
    method, (ctxt, stack), _ = api.calls[0]
    assert method == "select_stack"
    from scheduler.stacks.template import stack_id_for
    assert stack["stack_id"] == stack_id_for("shop")
    assert stack["resources"]["web"]["spec"]["flavor"]["memory_mb"] == 2048
    out = capsys.readouterr().out.splitlines()
    assert out[:5] == [f"stack {STACK_RESULT['stack_id']}", "order:",
                       "  1. net", "  2. db", "  3. web1, web2"]
    assert out[6].split() == ["resource", "host", "nodename", "uuid",
                              "vcpus", "memory_mb", "disk_gb"]
    assert out[8].split() == ["db", "compute-00001", "compute-00001",
                              UUID1, "2", "2048", "21"]


def test_stack_place_reads_environments_and_nested_templates(tmp_path):
    # As python-heatclient sends them: -e files merged in order, each
    # template named relative to the file naming it.
    (tmp_path / "lib").mkdir()
    path = tmp_path / "shop.yaml"
    path.write_text("heat_template_version: 2018-08-31\nresources:\n"
                    "  tier:\n    type: OS::Heat::ResourceGroup\n"
                    "    properties: {count: 2, resource_def: "
                    "{type: My::App}}\n")
    (tmp_path / "lib" / "app.yaml").write_text(
        "heat_template_version: 2018-08-31\n"
        "parameters: {size: {type: string, default: m1.tiny}}\n"
        "resources:\n  web: {type: server.yaml}\n")
    (tmp_path / "lib" / "server.yaml").write_text(
        TEMPLATE.replace("resources:", "parameters: {size: {type: string, "
                         "default: m1.tiny}}\nresources:").replace(
            "m1.small", "{get_param: size}"))
    (tmp_path / "lib" / "env.yaml").write_text(
        "resource_registry: {My::App: app.yaml}\n"
        "parameter_defaults: {size: m1.large}\n")
    (tmp_path / "more.yaml").write_text(
        "parameter_defaults: {size: m1.small}\n")
    api = FakeStackAPI({"rank_stack": STACK_RESULT})
    code, api = run(["stack", "rank", str(path), "-e",
                     str(tmp_path / "lib" / "env.yaml"),
                     "--environment", str(tmp_path / "more.yaml")], api)
    assert code == 0
    resources = api.calls[0][1][1]["resources"]
    assert sorted(resources) == ["tier", "tier/0", "tier/0/web",
                                 "tier/0/web/web", "tier/1", "tier/1/web",
                                 "tier/1/web/web"]
    assert resources["tier/1/web/web"]["spec"]["flavor"]["name"] == \
        "m1.small"


def test_stack_with_an_environment_missing_is_one_error_line(tmp_path,
                                                             capsys):
    path = tmp_path / "shop.yaml"
    path.write_text(TEMPLATE)
    code, api = run(["stack", "place", str(path), "-e",
                     str(tmp_path / "none.yaml")], FakeStackAPI())
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        f"ERROR: environment {tmp_path / 'none.yaml'}: No such file or "
        f"directory"]
    assert api.calls == []


def test_a_resource_of_several_instances_has_a_row_per_index():
    # A ResourceGroup's rows were all labelled "web", as its one server.
    rows = client_output.render_stack({
        "stack_id": STACK_RESULT["stack_id"], "order": [["db"], ["web"]],
        "resources": {"db": [SELECTED[0]],
                      "web": [SELECTED[1], SELECTED[0]]}}).splitlines()[5:]
    assert [row.split()[0] for row in rows] == [
        "resource", "--------", "db", "web[0]", "web[1]"]


def test_stack_release_sends_the_stack_id(tmp_path, capsys):
    path = tmp_path / "shop.yaml"
    path.write_text(TEMPLATE)
    api = FakeStackAPI({"release_stack": 3})
    code, api = run(["stack", "release", str(path), "--name", "other"],
                    api)
    assert code == 0
    from scheduler.stacks.template import stack_id_for
    assert api.calls[0][0] == "release_stack"
    assert api.calls[0][1][1] == stack_id_for("other")
    assert capsys.readouterr().out.strip() == "released 3"


def test_stack_with_a_bad_template_is_one_error_line(tmp_path, capsys):
    code, api = run(["stack", "rank", str(tmp_path / "none.yaml")],
                    FakeStackAPI())
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("ERROR: template ")
    assert api.calls == []


def test_stack_release_needs_neither_the_parameters_nor_the_template(
        tmp_path, capsys):
    # Placed with -P zone=az1; released without it, and once the template
    # is gone.
    path = tmp_path / "shop.yaml"
    path.write_text("heat_template_version: 2018-08-31\n"
                    "parameters: {zone: {type: string}}\n"
                    "resources:\n  web:\n    type: OS::Nova::Server\n"
                    "    properties: {flavor: m1.small, availability_zone: "
                    "{get_param: zone}}\n")
    from scheduler.stacks.template import stack_id_for
    code, api = run(["stack", "release", str(path)],
                    FakeStackAPI({"release_stack": 1}))
    assert code == 0, capsys.readouterr().err
    assert api.calls[0][1][1] == stack_id_for("shop")
    sid = "5a0b0c0d-0000-4000-8000-0000000000e2"
    code, api = run(["stack", "release", str(tmp_path / "gone.yaml"),
                     "--stack-id", sid], FakeStackAPI({"release_stack": 1}))
    assert code == 0, capsys.readouterr().err
    assert api.calls[0][1][1] == sid


@pytest.mark.parametrize("timeout", ["inf", "1e10"])
def test_a_timeout_no_wait_can_honour_is_a_usage_error(capsys, timeout):
    # inf waits for a dead broker for ever; past threading.TIMEOUT_MAX the
    # wait for the reply cannot even be started (OverflowError).
    with pytest.raises(SystemExit) as e:
        run(["--timeout", timeout, "ping"])
    assert e.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_a_bad_template_is_named_before_the_broker_is_asked(tmp_path,
                                                            capsys):
    # With the broker down, asking it first would wait the whole timeout
    # and then name the broker, not the file the operator mistyped.
    def factory(conf):
        raise AssertionError("connected to the broker")
    code = client.main(["stack", "place", str(tmp_path / "none.yaml")],
                       api_factory=factory)
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("ERROR: template "), err


#: What ``$'bad\xffbyte'`` in argv is to Python (surrogateescape).
BAD_BYTE = b"bad\xffbyte".decode("utf-8", "surrogateescape")
NOT_UTF8 = r"not valid UTF-8 (byte \xff); give it as UTF-8 text"


@pytest.mark.parametrize("argv, named", [
    (["select", "--force-host", BAD_BYTE],
     r"--force-host 'bad\xffbyte'"),
    (["rank", "--ignore-host", "h1", "--ignore-host", BAD_BYTE],
     r"--ignore-host 'bad\xffbyte'"),
    (["select", "--hint", f"group={BAD_BYTE}"],
     r"--hint 'group=bad\xffbyte'"),
    (["select", "--availability-zone", BAD_BYTE],
     r"--availability-zone 'bad\xffbyte'"),
    (["release", UUID1, BAD_BYTE], r"UUID 'bad\xffbyte'"),
    (["ping", "--server", BAD_BYTE], r"--server 'bad\xffbyte'")])
def test_an_argument_that_is_not_utf8_is_one_line_naming_it(
        capsys, argv, named):
    """argv's bytes that are not UTF-8 arrive as lone surrogates: named
    by their argument before anything is sent."""
    code, api = run(argv)
    assert (code, api.calls) == (1, [])
    assert capsys.readouterr().err == f"ERROR: {named}: {NOT_UTF8}\n"


def test_a_stack_name_that_is_not_utf8_is_one_line_naming_it(
        tmp_path, capsys):
    """A stack's id is derived from its name (uuid5 of its UTF-8): a name
    from --name or the template's file name that is not UTF-8 is named,
    not a UnicodeEncodeError; a file name that is not is still read."""
    path = tmp_path / "shop.yaml"
    path.write_text(TEMPLATE)
    code, api = run(["stack", "rank", str(path), "--name", BAD_BYTE],
                    FakeStackAPI({"rank_stack": STACK_RESULT}))
    assert (code, api.calls) == (1, [])
    assert capsys.readouterr().err == (
        rf"ERROR: --name 'bad\xffbyte': {NOT_UTF8}" + "\n")
    odd = tmp_path / f"{BAD_BYTE}.yaml"
    odd.write_text(TEMPLATE)
    code, api = run(["stack", "rank", str(odd)],
                    FakeStackAPI({"rank_stack": STACK_RESULT}))
    assert (code, api.calls) == (1, [])
    assert capsys.readouterr().err == (
        r"ERROR: the stack's name (TEMPLATE's file name without --name) "
        rf"'bad\xffbyte': {NOT_UTF8}" + "\n")
    code, api = run(["stack", "rank", str(odd), "--name", "shop"],
                    FakeStackAPI({"rank_stack": STACK_RESULT}))
    assert code == 0, capsys.readouterr().err
    from scheduler.stacks.template import stack_id_for
    assert api.calls[0][1][1]["stack_id"] == stack_id_for("shop")


def test_the_waiting_line_names_a_drain_being_planned(conf):
    drain = client_parser.parse_args(["host", "drain", "h1"])
    ping = client_parser.parse_args(["ping"])
    assert client.awaited(conf, drain) == (
        "a scheduler on topic 'scheduler' to plan the drain of h1")
    assert client.awaited(conf, ping) == "a scheduler on topic 'scheduler'"
