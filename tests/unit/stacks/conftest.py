"""The filter driver on the unit tests' real SQLite database; templates
read as select_stack requests."""
from pathlib import Path

import pytest
import yaml

from scheduler.decide.filter import FilterScheduler
from scheduler.stacks import files
from scheduler.stacks import template
from tests.unit.conftest import fresh_host_manager


@pytest.fixture
def filter_driver(conf, engine):
    return FilterScheduler(conf, fresh_host_manager(conf, engine), engine)


ETC = Path(__file__).resolve().parents[3] / "etc" / "scheduler"
FLAVORS = files.load_flavors(ETC / "flavors.yaml")
SID = "5a0b0c0d-0000-4000-8000-0000000000d1"


def stack_request(text: str, **kw) -> dict:
    """The select_stack request of template ``text`` (stack id SID, the
    flavors of etc/scheduler/flavors.yaml)."""
    return template.to_stack(yaml.safe_load(text), SID, FLAVORS, **kw)
