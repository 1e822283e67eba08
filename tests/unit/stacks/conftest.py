"""The filter driver on the unit tests' real SQLite database."""
import pytest

from scheduler.decide.filter import FilterScheduler
from tests.unit.conftest import fresh_host_manager


@pytest.fixture
def filter_driver(conf, engine):
    return FilterScheduler(conf, fresh_host_manager(conf, engine), engine)
