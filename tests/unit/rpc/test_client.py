"""SchedulerAPI on oslo.messaging's in-memory fake transport: the version
cap of the stack methods (nothing is sent when the cap refuses), and the
re-send of a timed-out select_destinations or select_stack."""
import oslo_messaging as messaging
import pytest

from scheduler import exception
from scheduler.rpc.client import SchedulerAPI


@pytest.mark.parametrize("call", [
    lambda api: api.select_stack({}, {"stack_id": "x", "resources": {}}),
    lambda api: api.rank_stack({}, {"stack_id": "x", "resources": {}}),
    lambda api: api.release_stack({}, "x"),
])
def test_stack_methods_need_1_4(conf, call):
    conf.set_override("scheduler", "1.2", group="upgrade_levels")
    transport = messaging.get_rpc_transport(conf, url="fake://")
    try:
        api = SchedulerAPI(conf, transport=transport)
        with pytest.raises(exception.InvalidRequest,
                           match=r"_stack needs RPC API 1.4 but "
                                 r"\[upgrade_levels\] scheduler caps this "
                                 r"client at 1.2"):
            call(api)
    finally:
        transport.cleanup()


class _TimingOut:
    """A prepared client whose first ``timeouts`` calls time out."""

    def __init__(self, timeouts: int):
        self.timeouts = timeouts
        self.calls: list[tuple[str, dict]] = []

    def call(self, ctxt, method, **kwargs):
        self.calls.append((method, kwargs))
        if len(self.calls) <= self.timeouts:
            raise messaging.MessagingTimeout("no reply")
        return {"answered": method}

    def can_send_version(self, version=None):
        return True


@pytest.fixture
def api(conf):
    transport = messaging.get_rpc_transport(conf, url="fake://")
    yield SchedulerAPI(conf, transport=transport)
    transport.cleanup()


SENT = [
    ("select_destinations", "request",
     lambda api: api.select_destinations(
         {}, {"flavor": {}, "instance_uuids": ["u1"]}),
     {"spec": {"flavor": {}, "instance_uuids": ["u1"]}}),
    ("select_stack", "stack",
     lambda api: api.select_stack({}, {"stack_id": "s", "resources": {}}),
     {"stack": {"stack_id": "s", "resources": {}}}),
]


@pytest.mark.parametrize("method, what, send, sent", SENT)
def test_a_timed_out_call_is_re_sent_the_same(api, conf, monkeypatch,
                                              caplog, method, what, send,
                                              sent):
    attempts = conf.scheduler.max_attempts
    assert attempts >= 2
    prepared = _TimingOut(timeouts=attempts - 1)
    monkeypatch.setattr(api.client, "prepare", lambda **kw: prepared)
    assert send(api) == {"answered": method}
    assert prepared.calls == [(method, sent)] * attempts
    assert (f"{method} timed out (attempt 1 of {attempts}); re-sending the "
            f"same {what}") in caplog.text


@pytest.mark.parametrize("method, what, send, sent", SENT)
def test_the_last_timeout_is_raised(api, conf, monkeypatch, method, what,
                                    send, sent):
    conf.set_override("max_attempts", 2, group="scheduler")
    prepared = _TimingOut(timeouts=2)
    monkeypatch.setattr(api.client, "prepare", lambda **kw: prepared)
    with pytest.raises(messaging.MessagingTimeout):
        send(api)
    assert len(prepared.calls) == 2


class _Timed(_TimingOut):
    """A _TimingOut that records the timeout each call was prepared
    with."""

    def __init__(self, timeouts: int):
        super().__init__(timeouts)
        self.timeouts_given: list[float] = []

    def prepare(self, timeout):
        self.timeouts_given.append(timeout)
        return self


@pytest.mark.parametrize("method, what, send, sent", SENT)
def test_re_sends_share_the_deadline(conf, monkeypatch, method, what,
                                     send, sent):
    """With a deadline (a command's --timeout), the attempts together end
    by it: each waits for its share of what is left, not for the RPC
    timeout each (three attempts of 5 s were 16 s for --timeout 5)."""
    import time
    conf.set_override("max_attempts", 3, group="scheduler")
    transport = messaging.get_rpc_transport(conf, url="fake://")
    try:
        started = time.monotonic()
        api = SchedulerAPI(conf, transport=transport, deadline=started + 6)
        prepared = _Timed(timeouts=3)
        monkeypatch.setattr(api.client, "prepare", lambda **kw: prepared)
        with pytest.raises(messaging.MessagingTimeout):
            send(api)
    finally:
        transport.cleanup()
    # The fake times out at once: each attempt shares all that is left
    # (a real one would have spent its share).
    first, second, third = prepared.timeouts_given
    assert 6 / 3 - 1 < first <= 6 / 3
    assert 6 / 2 - 1 < second <= 6 / 2
    assert 6 - 1 < third <= 6
    assert len(prepared.calls) == 3


@pytest.mark.parametrize("call", [
    lambda api: api.ping({}),
    lambda api: api.select_destinations(
        {}, {"flavor": {}, "instance_uuids": ["u1"]}),
    lambda api: api.rank_destinations({}, {}),
    lambda api: api.release({}, ["u1"]),
    lambda api: api.confirm({}, ["u1"]),
    lambda api: api.confirm_move({}, ["u1"]),
    lambda api: api.revert_move({}, ["u1"]),
    lambda api: api.select_stack({}, {"stack_id": "s", "resources": {}}),
    lambda api: api.rank_stack({}, {"stack_id": "s", "resources": {}}),
    lambda api: api.release_stack({}, "s"),
    lambda api: api.plan_drain({}, "h1"),
    lambda api: api.cancel_drain({}, "h1"),
    lambda api: api.capacity({}, {}),
], ids=["ping", "select_destinations", "rank_destinations", "release",
        "confirm", "confirm_move", "revert_move", "select_stack",
        "rank_stack", "release_stack", "plan_drain", "cancel_drain",
        "capacity"])
def test_no_call_is_sent_after_its_deadline(conf, monkeypatch, call):
    import time
    transport = messaging.get_rpc_transport(conf, url="fake://")
    try:
        api = SchedulerAPI(conf, transport=transport,
                           deadline=time.monotonic() - 1)
        prepared = _Timed(timeouts=0)
        monkeypatch.setattr(api.client, "prepare", lambda **kw: prepared)
        with pytest.raises(messaging.MessagingTimeout):
            call(api)
    finally:
        transport.cleanup()
    assert prepared.calls == []


def test_the_re_send_line_carries_no_exception(api, conf, monkeypatch,
                                               oslo_log_lines):
    """oslo.log appends the exception in flight to a WARNING logged
    inside its except clause: the line ended in
    'oslo_messaging.exceptions.MessagingTimeout: Timed out waiting for a
    reply to message ID ...'."""
    lines = oslo_log_lines("scheduler.rpc.client")
    prepared = _TimingOut(timeouts=1)
    monkeypatch.setattr(api.client, "prepare", lambda **kw: prepared)
    api.select_stack({}, {"stack_id": "s", "resources": {}})
    [line] = lines
    assert line.endswith("select_stack timed out (attempt 1 of "
                         f"{conf.scheduler.max_attempts}); re-sending the "
                         f"same stack"), line
