"""scheduler.rpc.malformed: one rate-limited WARNING per malformed message."""
from __future__ import annotations

import logging
import sys

from oslo_messaging.rpc import dispatcher as rpc_dispatcher

from scheduler import conf as sched_conf
from scheduler.rpc import instrument
from scheduler.rpc import malformed


def _record(name, msg, exc):
    try:
        raise exc
    except Exception:
        info = sys.exc_info()
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, (), info)


DECODE = malformed._DECODE
DISPATCH = malformed._DISPATCH


def test_decode_failure_becomes_one_warning_then_is_rate_limited():
    now = [100.0]
    flt = malformed.MalformedMessageFilter(10, clock=lambda: now[0])
    first = _record(*DECODE, ValueError("Expecting value: line 1"))
    assert flt.filter(first)
    assert first.levelname == "WARNING" and first.exc_info is None
    assert first.getMessage() == ("Dropped a malformed message on the topic "
                                  "(cannot decode it; ValueError)")
    assert not flt.filter(_record(*DECODE, ValueError("x")))
    assert not flt.filter(_record(*DECODE, ValueError("y")))
    now[0] += 10
    later = _record(*DISPATCH, rpc_dispatcher.NoSuchMethod("nope"))
    assert flt.filter(later)
    assert later.getMessage() == (
        "Dropped a malformed message on the topic (cannot dispatch it; "
        "NoSuchMethod), 2 more since the last warning")


def _deep_type_error():
    return len(5)


def test_a_bug_in_our_code_keeps_its_traceback():
    flt = malformed.MalformedMessageFilter(10)
    try:
        _deep_type_error()
    except TypeError:
        info = sys.exc_info()
    record = logging.LogRecord(DISPATCH[0], logging.ERROR, __file__, 1,
                               DISPATCH[1], (), info)
    assert flt.filter(record)
    assert record.levelname == "ERROR" and record.exc_info is info
    other = _record("other.logger", DECODE[1], ValueError("x"))
    assert flt.filter(other) and other.exc_info is not None


class _Endpoint:
    conf = sched_conf.load([])

    @instrument.rpc_method
    def ping(self, ctxt):
        return "pong"


def test_an_unknown_argument_to_an_instrumented_method_is_malformed():
    """A message naming an argument the method lacks fails in the call
    the endpoint decorator makes: a malformed message, one WARNING, not
    a bug's traceback (wherever the decorator's module lives)."""
    flt = malformed.MalformedMessageFilter(10)
    try:
        _Endpoint().ping({}, bogus=1)
    except TypeError:
        info = sys.exc_info()
    record = logging.LogRecord(DISPATCH[0], logging.ERROR, __file__, 1,
                               DISPATCH[1], (), info)
    assert flt.filter(record)
    assert record.levelname == "WARNING" and record.exc_info is None
