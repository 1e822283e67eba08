"""Drivers on a real SQLite database."""
import pytest

from scheduler.decide.caching import CachingScheduler
from scheduler.decide.chance import ChanceScheduler
from scheduler.decide.filter import FilterScheduler
from tests.unit.conftest import fresh_host_manager


@pytest.fixture
def make_driver(conf, engine):
    def _make(cls=FilterScheduler):
        return cls(conf, fresh_host_manager(conf, engine), engine)
    return _make


@pytest.fixture
def filter_driver(make_driver):
    return make_driver(FilterScheduler)


@pytest.fixture
def chance_driver(make_driver):
    return make_driver(ChanceScheduler)


@pytest.fixture
def caching_driver(make_driver):
    return make_driver(CachingScheduler)
