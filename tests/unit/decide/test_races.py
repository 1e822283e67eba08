"""scheduler.decide.races: every lost claim race is one INFO line and counted."""
from __future__ import annotations

import logging

import pytest

from scheduler.hosts.planned import ClaimConflict
from scheduler import exception
from scheduler.decide import races
from scheduler.decide.filter import FilterScheduler
from tests.unit.conftest import fresh_host_manager
from tests.unit.fakes import make_spec
from tests.unit.fakes import node


def test_a_lost_race_is_one_line_and_counted(caplog):
    before = races.totals()
    with caplog.at_level(logging.INFO, logger="scheduler.decide.races"):
        races.lost(7, 2, 0.0125, replanning=True)
        races.lost(8, 3, 0.001, replanning=False)
    after = races.totals()
    assert after.lost - before.lost == 2
    assert after.replans - before.replans == 1
    assert after.given_up - before.given_up == 1
    assert after.wasted_s - before.wasted_s == pytest.approx(0.0135)
    assert [r.getMessage() for r in caplog.records] == [
        "Lost a claim race on compute node 7 (attempt 2): 12.50 ms of CPU "
        "thrown away; re-planning",
        "Lost a claim race on compute node 8 (attempt 3): 1.00 ms of CPU "
        "thrown away; giving up"]


def test_the_driver_records_each_lost_race(register, conf, engine,
                                           monkeypatch):
    register(node("h1"))
    conf.set_override("claim_retries", 2, group="scheduler")
    driver = FilterScheduler(conf, fresh_host_manager(conf, engine), engine)

    def always_conflict(to_claim, **kw):
        raise ClaimConflict("node changed", to_claim[0].node_id)

    monkeypatch.setattr(driver.claims, "claim", always_conflict)
    before = races.totals()
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(make_spec(
            flavor={"memory_mb": 512, "vcpus": 1, "root_gb": 1}))
    after = races.totals()
    assert (after.lost - before.lost, after.replans - before.replans,
            after.given_up - before.given_up) == (3, 2, 1)
    # Every attempt's node was handed back to the chooser: none is left
    # marked as being claimed.
    assert driver.chooser._claiming == {}


def test_a_lost_race_is_a_race_in_the_metrics():
    from tests.unit.test_metrics import samples

    key = ("scheduler_claim_conflicts_total",
           frozenset({"kind": "race"}.items()))
    before = samples()[key]
    races.lost(9, 1, 0.001, replanning=True)
    assert samples()[key] - before == 1
