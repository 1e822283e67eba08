"""scheduler.rpc.instrument: database failures become ServiceUnavailable."""
from __future__ import annotations

import logging
import re
import time

from oslo_messaging.rpc import dispatcher as rpc_dispatcher
from oslo_config import cfg
import pytest
from sqlalchemy import exc as sa_exc

from scheduler import conf as sched_conf
from scheduler import exception
from scheduler.rpc import instrument
from scheduler import trace
from scheduler.db import retry as db_retry
from tests.unit.rpc.test_notifications import Recorder


class Endpoint:
    def __init__(self, error=None):
        self.conf = sched_conf.load([])
        self.conf.set_override("connection", "sqlite:////srv/s.sqlite",
                               group="database")
        self.error = error

    @instrument.rpc_method
    def call(self, ctxt, value=None):
        if self.error:
            raise self.error
        return value


def test_passes_arguments_and_result():
    assert Endpoint().call({}, 5) == 5
    assert Endpoint().call({"request_id": "req-1"}, value=6) == 6


def test_read_only_database_is_an_expected_service_unavailable():
    error = sa_exc.OperationalError("INSERT INTO allocations", {},
                                    Exception("attempt to write a "
                                              "readonly database"))
    with pytest.raises(rpc_dispatcher.ExpectedException) as raised:
        Endpoint(error).call({})
    original = raised.value.exc_info[1]
    assert isinstance(original, exception.ServiceUnavailable)
    assert original.message.startswith(
        "database /srv/s.sqlite is read-only for this user")
    assert "INSERT" not in original.message


class NotOurs(Exception):
    """A refusal class of another API (as nova's NoValidHost is)."""


class Refusing(Endpoint):
    refusals = (NotOurs,)


def test_an_endpoint_names_its_own_refusals(caplog):
    assert instrument.outcome_of(NotOurs("x")) == "error"
    assert instrument.outcome_of(NotOurs("x"), (NotOurs,)) == \
        "no_valid_host"
    assert instrument.outcome_of(exception.NoValidHost("x"), (NotOurs,)) \
        == "error"
    caplog.set_level(logging.DEBUG, logger="scheduler.rpc.instrument")
    with pytest.raises(NotOurs):
        Refusing(NotOurs("no host")).call({})
    [line] = [r.getMessage() for r in caplog.records
              if r.name == "scheduler.rpc.instrument"]
    assert line.startswith("call no_valid_host in ")


class Notified:
    """An endpoint with a notifier: a parsing method and a quiet one."""
    rpc_api = "unit"

    def __init__(self):
        self.conf = sched_conf.load([])
        self.notifier = Recorder()

    @instrument.rpc_method
    def select_destinations(self, ctxt, spec=None):
        if spec is None:
            raise exception.InvalidRequest("spec: missing")
        trace.parsed(["99999999-0000-4000-8000-000000000001"],
                     since=time.perf_counter())
        return 1

    @instrument.rpc_method
    def ping(self, ctxt):
        return "pong"


def test_a_request_sends_start_then_end():
    endpoint = Notified()
    assert endpoint.select_destinations({"request_id": "req-n"}, {}) == 1
    assert [e for _, e, _ in endpoint.notifier.sent] == [
        "scheduler.select_destinations.start",
        "scheduler.select_destinations.end"]
    assert endpoint.notifier.sent[0][2]["request_id"] == "req-n"
    assert endpoint.notifier.sent[0][2]["api"] == "unit"


def test_a_request_refused_before_it_parsed_still_starts_first():
    endpoint = Notified()
    with pytest.raises(exception.InvalidRequest):
        endpoint.select_destinations({})
    assert [(level, e) for level, e, _ in endpoint.notifier.sent] == [
        ("INFO", "scheduler.select_destinations.start"),
        ("ERROR", "scheduler.select_destinations.error")]
    assert endpoint.notifier.sent[1][2]["message"] == "spec: missing"


def test_reads_send_nothing():
    endpoint = Notified()
    assert endpoint.ping({}) == "pong"
    assert endpoint.notifier.sent == []


def test_outcomes():
    assert instrument.outcome_of(None) == "ok"
    assert instrument.outcome_of(exception.NoValidHost("x")) == \
        "no_valid_host"
    assert instrument.outcome_of(exception.InvalidRequest("x")) == \
        "invalid_request"
    assert instrument.outcome_of(exception.ServiceUnavailable("x")) == \
        "service_unavailable"
    assert instrument.outcome_of(KeyError("x")) == "error"


def test_one_debug_line_with_the_stage_timings(caplog):
    endpoint = Notified()
    caplog.set_level(logging.DEBUG, logger="scheduler.rpc.instrument")
    endpoint.select_destinations({}, {})
    [line] = [r.getMessage() for r in caplog.records
              if r.name == "scheduler.rpc.instrument"]
    assert re.fullmatch(r"select_destinations ok in [\d.]+ ms: "
                        r"parse [\d.]+ ms", line)


class Patient(Endpoint):
    """An endpoint whose transport registered rpc_response_timeout."""

    def __init__(self):
        super().__init__()
        self.conf.register_opts([cfg.IntOpt("rpc_response_timeout",
                                            default=60)])
        self.seen: list = []

    @instrument.rpc_method
    def call(self, ctxt, value=None):
        self.seen.append(db_retry._request.patience)
        raise exception.CallerGone("the caller stopped waiting")



class Nova(Patient):
    patient_callers = True


def test_a_request_whose_caller_is_gone_is_dropped_in_one_line(caplog):
    endpoint = Patient()
    with pytest.raises(rpc_dispatcher.ExpectedException) as raised:
        endpoint.call({})
    assert isinstance(raised.value.exc_info[1], exception.CallerGone)
    [line] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert line.getMessage() == "call dropped: the caller stopped waiting"
    assert line.exc_info is None
    assert endpoint.seen == [60]
    # Nova's conductor waits as long as the server says it works.
    nova = Nova()
    with pytest.raises(rpc_dispatcher.ExpectedException):
        nova.call({})
    assert nova.seen == [None]
