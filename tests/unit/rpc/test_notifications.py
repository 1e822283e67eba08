"""scheduler.rpc.notifications: when a notifier exists, and the payloads."""
from __future__ import annotations

from scheduler import exception
from scheduler.rpc import notifications
from scheduler import trace
from tests.unit.fakes import make_spec


class Recorder:
    """Stands in for oslo.messaging's Notifier: what would be sent."""

    def __init__(self):
        self.sent = []

    def info(self, ctxt, event_type, payload):
        self.sent.append(("INFO", event_type, payload))

    def error(self, ctxt, event_type, payload):
        self.sent.append(("ERROR", event_type, payload))


def test_no_driver_no_notifier(conf):
    assert notifications.notifier(conf) is None


def test_a_driver_makes_a_notifier_publishing_as_this_host(conf):
    assert notifications.notifier(conf) is None     # registers the options
    conf.set_override("transport_url", "fake:/")
    conf.set_override("driver", ["noop"],
                      group="oslo_messaging_notifications")
    conf.set_override("host", "sched-1")
    notifier = notifications.notifier(conf)
    try:
        assert notifier.publisher_id == "scheduler.sched-1"
    finally:
        notifier.transport.cleanup()


def test_start_end_and_error_payloads():
    spec = make_spec(instance_uuids=["99999999-0000-4000-8000-000000000001"])
    recorder = Recorder()
    t = trace.begin("select_destinations")
    trace.parsed(spec)
    trace.refused("RamFilter")
    trace.end()
    notifications.start(recorder, "scheduler", t)
    notifications.end(recorder, "scheduler", t, [
        {"uuid": spec.instance_uuids[0], "host": "h1", "nodename": "n1",
         "limits": {}}], 0.0125)
    notifications.error(recorder, "scheduler", t,
                        exception.NoValidHost("No valid host: ..."))
    [(_, start_type, start), (_, end_type, end), (level, error_type, error)
     ] = recorder.sent
    assert (start_type, end_type, error_type) == (
        "scheduler.select_destinations.start",
        "scheduler.select_destinations.end",
        "scheduler.select_destinations.error")
    assert start["instance_uuids"] == list(spec.instance_uuids)
    assert start["num_instances"] == 1
    assert set(start["flavor"]) == {"name", "vcpus", "memory_mb", "disk_gb"}
    assert end["destinations"] == [{"instance_uuid": spec.instance_uuids[0],
                                    "host": "h1", "nodename": "n1"}]
    assert end["duration_ms"] == 12.5
    assert level == "ERROR"
    assert error["message"] == "No valid host: ..."
    assert error["refused_by"] == "RamFilter"


def test_a_count_for_confirm_revert_and_release():
    recorder = Recorder()
    t = trace.begin("confirm_move")
    trace.parsed(["99999999-0000-4000-8000-000000000001"])
    trace.end()
    notifications.end(recorder, "scheduler", t, 1, 0.001)
    [(_, _, payload)] = recorder.sent
    assert payload["count"] == 1
    assert payload["num_instances"] == 1


def test_a_notification_that_cannot_be_built_does_not_fail_the_request(
        caplog):
    recorder = Recorder()
    t = trace.begin("select_destinations")
    trace.end()
    notifications.end(recorder, "scheduler", t, [{"no": "uuid"}], 0.001)
    assert recorder.sent == []
    assert "Notification of select_destinations not sent" in caplog.text
