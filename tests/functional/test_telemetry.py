"""Telemetry of a real server: Prometheus /metrics across workers,
notifications on a real broker, request ids and stage timings in the log."""
from __future__ import annotations

import os
import re
import signal
import threading
import time
import urllib.request
import uuid

import oslo_messaging as messaging
from prometheus_client.parser import text_string_to_metric_families
import pytest

from scheduler import exception
from tests.fixtures import _net
from tests.functional.conftest import node

FLAVOR = {"memory_mb": 512, "vcpus": 1, "root_gb": 1}
TOO_BIG = {"memory_mb": 10 ** 7, "vcpus": 1, "root_gb": 1}


def _listening(make_deployment, **options):
    [port] = _net.free_ports(1)
    deployment = make_deployment(
        scheduler__http_listen=f"127.0.0.1:{port}", **options)
    return deployment, f"http://127.0.0.1:{port}/metrics"


def scrape(url: str) -> dict[tuple[str, frozenset], float]:
    """/metrics as {(sample name, labels): value}; asserts a 200 in
    Prometheus' text format."""
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples}


def value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def series(samples, name: str) -> dict[frozenset, float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def worker_pids(deployment) -> list[int]:
    return [int(pid) for pid in re.findall(
        r"^\S+ \S+ (\d+) INFO \S+ \[-\] Scheduler worker consuming",
        deployment.server_log(), re.M)]


def test_metrics_add_up_across_two_workers_during_and_after_load(
        make_deployment):
    deployment, url = _listening(make_deployment, scheduler__workers=2,
                                 DEFAULT__debug="true")
    deployment.fleet(20)
    deployment.start_server()
    placed, refused, threads = 40, 4, 4
    done = threading.Event()
    during: list[dict] = []

    def scraper():
        # At least one scrape while the load runs, however fast it is.
        while not done.is_set() or not during:
            during.append(scrape(url))

    def load(count):
        for _ in range(count):
            deployment.api.select_destinations({}, {"flavor": FLAVOR})

    workers = [threading.Thread(target=load, args=(placed // threads,))
               for _ in range(threads)]
    watcher = threading.Thread(target=scraper)
    for t in workers:
        t.start()
    watcher.start()
    for _ in range(refused):
        with pytest.raises(exception.NoValidHost):
            deployment.api.select_destinations({}, {"flavor": TOO_BIG})
    for t in workers:
        t.join()
    done.set()
    watcher.join()

    ok = {"api": "scheduler", "method": "select_destinations"}
    seen = [value(s, "scheduler_requests_total", outcome="ok", **ok)
            for s in during]
    assert seen == sorted(seen) and seen[-1] <= placed
    after = scrape(url)
    assert value(after, "scheduler_requests_total", outcome="ok",
                 **ok) == placed
    assert value(after, "scheduler_requests_total",
                 outcome="no_valid_host", **ok) == refused
    assert value(after, "scheduler_refusals_total",
                 filter="RamFilter") == refused
    assert value(after, "scheduler_request_duration_seconds_count",
                 **ok) == placed + refused
    stages = {stage: value(after, "scheduler_stage_duration_seconds_count",
                           stage=stage)
              for stage in ("parse", "refresh", "filter", "weigh", "claim")}
    # A request that queued behind another's scheduling cycle may be
    # served by the refresh that one began after it arrived: it spends no
    # time refreshing and records none.
    refreshes = stages.pop("refresh")
    assert 1 <= refreshes <= placed + refused
    assert stages == {"parse": placed + refused,
                      "filter": placed + refused,
                      "weigh": placed, "claim": placed}
    # Every refused claim was planned again (none gave up: all placed).
    conflicts = sum(value(after, "scheduler_claim_conflicts_total", kind=k)
                    for k in ("race", "disagreement", "duplicate"))
    assert value(after, "scheduler_replans_total") == conflicts
    assert len(deployment.allocations()) == placed

    # Both workers served: their DEBUG lines (pid is the third field) add
    # up to what /metrics says.
    pids = worker_pids(deployment)
    assert len(pids) == 2
    served = re.findall(r"^\S+ \S+ (\d+) DEBUG scheduler.rpc.instrument \[.*\] "
                        r"select_destinations ok in ",
                        deployment.server_log(), re.M)
    assert sorted(set(map(int, served))) == sorted(pids)
    assert len(served) == placed
    # One host table per live worker, not a sum of them.
    assert series(after, "scheduler_host_table_hosts") == {
        frozenset({("pid", str(pid))}): 20.0 for pid in pids}
    ages = series(after, "scheduler_host_table_refresh_age_seconds")
    assert set(ages) == {frozenset({("pid", str(pid))}) for pid in pids}
    assert all(age >= 0 for age in ages.values())

    # A worker that dies: its host table leaves /metrics, its counts stay.
    os.kill(pids[0], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while len(worker_pids(deployment)) < 3:
        assert time.monotonic() < deadline, deployment.server_log()[-3000:]
        time.sleep(0.2)
    restarted = scrape(url)
    assert frozenset({("pid", str(pids[0]))}) not in series(
        restarted, "scheduler_host_table_hosts")
    assert value(restarted, "scheduler_requests_total", outcome="ok",
                 **ok) == placed


class _Listener:
    """Notifications received on a topic, by event type."""

    def __init__(self):
        self.events: list[tuple[str, str, dict]] = []
        self._lock = threading.Lock()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self._lock:
            self.events.append(("INFO", event_type, payload))

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        with self._lock:
            self.events.append(("ERROR", event_type, payload))

    def wait_for(self, count: int, timeout: float = 30) -> list:
        deadline = time.monotonic() + timeout
        while len(self.events) < count:
            assert time.monotonic() < deadline, self.events
            time.sleep(0.1)
        time.sleep(0.5)     # nothing more should arrive
        return list(self.events)


@pytest.fixture
def notifications(make_deployment):
    """A server with driver=messagingv2 on a topic of its own, and a real
    oslo.messaging notification listener on that topic."""
    topic = f"notifications-{uuid.uuid4().hex[:8]}"
    deployment = make_deployment(
        oslo_messaging_notifications__driver="messagingv2",
        oslo_messaging_notifications__topics=topic)
    deployment.add_nodes([node(f"h{i}", memory_mb=2048) for i in (1, 2)])
    transport = messaging.get_notification_transport(deployment.conf)
    received = _Listener()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic=topic)], [received],
        executor="threading")
    listener.start()
    deployment.start_server()
    yield deployment, received
    listener.stop()
    listener.wait()
    transport.cleanup()


def test_decisions_send_start_and_end_or_error_with_the_explanation(
        notifications):
    deployment, received = notifications
    instance = str(uuid.uuid4())
    [placed] = deployment.api.select_destinations(
        {"request_id": "req-placed"},
        {"flavor": FLAVOR, "instance_uuids": [instance]})
    with pytest.raises(exception.NoValidHost):
        deployment.api.select_destinations({"request_id": "req-refused"},
                                           {"flavor": TOO_BIG})
    deployment.api.ping({})     # a read: sends nothing

    events = received.wait_for(4)
    assert [(p, e) for p, e, _ in events] == [
        ("INFO", "scheduler.select_destinations.start"),
        ("INFO", "scheduler.select_destinations.end"),
        ("INFO", "scheduler.select_destinations.start"),
        ("ERROR", "scheduler.select_destinations.error")]
    start, end, _, error = (payload for _, _, payload in events)
    assert start["request_id"] == "req-placed"
    assert start["instance_uuids"] == [instance]
    assert start["flavor"] == {"name": None, "vcpus": 1, "memory_mb": 512,
                               "disk_gb": 1}
    assert end["destinations"] == [{"instance_uuid": instance,
                                    "host": placed["host"],
                                    "nodename": placed["nodename"]}]
    assert error["request_id"] == "req-refused"
    assert error["error"] == "NoValidHost"
    assert error["refused_by"] == "RamFilter"
    assert error["message"] == (
        "No valid host: 0/2 hosts passed. RamFilter removed 2 "
        "(insufficient RAM: need 10000000 MB)")


def test_moves_and_stacks_notify_too(notifications):
    deployment, received = notifications
    instance = str(uuid.uuid4())
    [first] = deployment.api.select_destinations(
        {}, {"flavor": FLAVOR, "instance_uuids": [instance]})
    [moved] = deployment.api.select_destinations(
        {}, {"flavor": FLAVOR, "instance_uuids": [instance], "move": True,
             "ignore_hosts": [first["host"]]})
    assert deployment.api.confirm_move({}, [instance]) == 1
    stack_id = str(uuid.uuid4())
    deployment.api.select_stack({}, {
        "stack_id": stack_id,
        "resources": {"web": {"spec": {"flavor": FLAVOR,
                                       "num_instances": 2}}}})
    assert deployment.api.release_stack({}, stack_id) == 2

    events = received.wait_for(10)
    assert [e for _, e, _ in events] == [
        "scheduler.select_destinations.start",
        "scheduler.select_destinations.end",
        "scheduler.select_destinations.start",
        "scheduler.select_destinations.end",
        "scheduler.confirm_move.start", "scheduler.confirm_move.end",
        "scheduler.select_stack.start", "scheduler.select_stack.end",
        "scheduler.release_stack.start", "scheduler.release_stack.end"]
    payloads = [p for _, _, p in events]
    assert payloads[2]["move"] is True
    assert payloads[3]["destinations"][0]["host"] == moved["host"] != \
        first["host"]
    assert payloads[5]["instance_uuids"] == [instance]
    assert payloads[5]["count"] == 1
    assert payloads[6]["stack_id"] == stack_id
    assert payloads[6]["resources"]["web"]["num_instances"] == 2
    assert sorted(d["resource"] for d in payloads[7]["destinations"]) == [
        "web", "web"]
    assert payloads[9]["count"] == 2


def test_drains_notify_what_they_move_and_capacity_is_quiet(notifications):
    deployment, received = notifications
    [placed] = deployment.api.select_destinations(
        {}, {"flavor": FLAVOR, "force_hosts": ["h1"]})
    plan = deployment.api.plan_drain({}, "h1", apply=True)
    assert deployment.api.cancel_drain({}, "h1") == 1
    deployment.api.capacity({}, {"flavor": FLAVOR})    # a read

    events = received.wait_for(6)
    assert [e for _, e, _ in events][2:] == [
        "scheduler.plan_drain.start", "scheduler.plan_drain.end",
        "scheduler.cancel_drain.start", "scheduler.cancel_drain.end"]
    start, end, _, cancelled = (p for _, _, p in events[2:])
    assert (start["host"], start["apply"]) == ("h1", True)
    assert end["destinations"] == [{
        "instance_uuid": placed["uuid"], "from_host": "h1", "host": "h2",
        "nodename": plan["moves"][0]["to"]["nodename"]}]
    assert (cancelled["host"], cancelled["count"]) == ("h1", 1)


def test_every_log_line_of_a_request_carries_its_ids(make_deployment):
    deployment = make_deployment(DEFAULT__debug="true")
    deployment.fleet(3)
    deployment.start_server()
    ids = {"request_id": f"req-{uuid.uuid4()}",
           "global_request_id": f"req-{uuid.uuid4()}"}
    refused_id = f"req-{uuid.uuid4()}"
    deployment.api.select_destinations(ids, {"flavor": FLAVOR})
    with pytest.raises(exception.NoValidHost):
        deployment.api.select_destinations({"request_id": refused_id},
                                           {"flavor": TOO_BIG})
    deployment.stop_servers()
    lines = deployment.server_log().splitlines()

    def of_request(request_id):
        # The request's lines are the worker's lines from its first line
        # with the id to its last (requests were sent one at a time).
        marked = [i for i, line in enumerate(lines) if request_id in line]
        assert marked, request_id
        pid = lines[marked[0]].split()[2]
        return [line for line in lines[marked[0]:marked[-1] + 1]
                if line.split()[2:3] == [pid]]

    placed = of_request(ids["request_id"])
    assert all(f"[{ids['global_request_id']} {ids['request_id']} " in line
               for line in placed), placed
    assert any(" DEBUG scheduler.rpc.endpoint " in line and "Placed " in line
               for line in placed)
    [timings] = [line for line in placed if "select_destinations ok in" in
                 line]
    assert re.search(r"parse [\d.]+ ms, refresh [\d.]+ ms, filter [\d.]+ "
                     r"ms, weigh [\d.]+ ms, claim [\d.]+ ms", timings)
    refused = of_request(refused_id)
    assert all(f"[None {refused_id} " in line for line in refused)
    assert any(" INFO scheduler.rpc.endpoint " in line and "refused" in line
               for line in refused)
    # A placement is no INFO line of its own any more.
    assert not any(" INFO " in line and "Placed " in line for line in lines)
