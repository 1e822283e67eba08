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
