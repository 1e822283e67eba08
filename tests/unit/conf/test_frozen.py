"""freeze(): a configuration's values at one moment."""
from oslo_config import cfg
import pytest

from scheduler.conf import frozen


def test_frozen_values_do_not_follow_later_changes(conf):
    conf.set_override("enabled_filters", ["RamFilter"],
                      group="filter_scheduler")
    settings = frozen.freeze(conf)
    conf.set_override("enabled_filters", ["ComputeFilter"],
                      group="filter_scheduler")
    conf.set_override("host", "elsewhere")
    assert settings.filter_scheduler.enabled_filters == ["RamFilter"]
    assert settings.filter_scheduler["enabled_filters"] == ["RamFilter"]
    # Unset: decide.choice.subset_size picks by the processes on the topic.
    assert settings["filter_scheduler"]["host_subset_size"] is None
    assert settings.host != "elsewhere"


def test_a_list_value_is_a_copy(conf):
    settings = frozen.freeze(conf)
    settings.filter_scheduler.weighers.append("Nope")
    assert "Nope" not in conf.filter_scheduler.weighers


def test_unknown_names_are_no_such_opt_errors(conf):
    settings = frozen.freeze(conf)
    with pytest.raises(cfg.NoSuchOptError):
        settings.filter_scheduler.no_such_option
    with pytest.raises(cfg.NoSuchOptError):
        settings.no_such_group
