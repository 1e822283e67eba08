"""benchmarks.service_split reads the service's own request and stage
histograms, as scheduler.metrics writes them, and splits a row's time."""
from __future__ import annotations

import pytest

from benchmarks import service_split
from scheduler import metrics
from scheduler import trace


def _request(method: str, stages: dict[int, float]) -> None:
    t = trace.begin(method)
    for stage, seconds in stages.items():
        trace.add(stage, seconds)
    trace.end()
    metrics.record_request("scheduler", "ok", t)


def _scraped(method: str) -> dict[str, float]:
    body, _ = metrics.render()
    return service_split.parse(body.decode(), method)


def test_a_split_is_the_mean_per_request_of_the_handler_and_each_stage():
    before = _scraped("unit_split")
    _request("unit_split", {trace.PARSE: 0.001, trace.REFRESH: 0.004,
                            trace.CLAIM: 0.010})
    # A request that skipped the refresh counts 0 for it.
    _request("unit_split", {trace.PARSE: 0.003, trace.CLAIM: 0.020})

    split = service_split.split(before, _scraped("unit_split"))

    assert split["parse"] == pytest.approx(0.002)
    assert split["refresh"] == pytest.approx(0.002)
    assert split["claim"] == pytest.approx(0.015)
    assert split["filter"] == split["weigh"] == 0
    # The handler's own duration (here: no stage really ran).
    assert 0 < split[service_split.SERVICE] < 1


def test_requests_of_other_methods_are_not_counted():
    before = _scraped("unit_split_mine")
    _request("unit_split_other", {trace.PARSE: 0.001})
    assert service_split.split(before, _scraped("unit_split_mine")) is None


def test_every_stage_of_a_request_has_a_column():
    assert service_split.STAGES == trace.STAGES
    assert set(_scraped("unit_split")) == {
        "count", service_split.SERVICE, *trace.STAGES}
