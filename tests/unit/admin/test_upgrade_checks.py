"""scheduler.admin.upgrade_checks: operator errors become a FAILURE naming
them; a bug in a check still raises (oslo.upgradecheck's exit 255)."""
from __future__ import annotations

import pytest

from scheduler import conf as sched_conf
from scheduler import exception
from scheduler.admin import upgrade_checks


class _Checks(upgrade_checks.Checks):
    @upgrade_checks._failure_for_operator_errors
    def operator_error(self):
        raise exception.ConfigError("[x] y: wrong; fix it")

    @upgrade_checks._failure_for_operator_errors
    def bug(self):
        raise KeyError("oops")


def test_operator_error_is_a_failure_with_its_line():
    result = _Checks(sched_conf.new_conf()).operator_error()
    assert result.code == upgrade_checks.Code.FAILURE
    assert result.details == "[x] y: wrong; fix it"


def test_bug_raises():
    with pytest.raises(KeyError):
        _Checks(sched_conf.new_conf()).bug()


def test_unknown_filter_fails_the_config_check_naming_it():
    conf = sched_conf.new_conf()
    conf([], default_config_files=[])
    conf.set_override("enabled_filters", ["NoSuchFilter"],
                      group="filter_scheduler")
    result = upgrade_checks.Checks(conf).check_config()
    assert result.code == upgrade_checks.Code.FAILURE
    assert "no plugin named NoSuchFilter" in result.details


def test_a_value_that_does_not_read_fails_the_config_check_naming_it(
        tmp_path):
    path = tmp_path / "s.conf"
    path.write_text("[filter_scheduler]\nhost_subset_size = x\n")
    conf = sched_conf.new_conf()
    conf(["--config-file", str(path)], default_config_files=[])
    result = upgrade_checks.Checks(conf).check_config()
    assert result.code == upgrade_checks.Code.FAILURE
    assert "host_subset_size" in result.details


def test_checks_are_named_in_order():
    assert [name for name, _ in upgrade_checks.Checks._upgrade_checks] == [
        "Database", "Schema revision", "Message broker", "Configuration",
        "Nova databases", "Heat database"]


def test_the_config_check_names_the_filters_that_run_added_ones_too():
    """Nova 34's own list has no capacity filter; the pipeline adds them
    (drivers.filter.with_capacity), and the check says so rather than
    counting filters the operator did not list."""
    conf = sched_conf.new_conf()
    conf([], default_config_files=[])
    conf.set_override("enabled_filters", ["ComputeFilter"],
                      group="filter_scheduler")
    conf.set_override("weighers", ["RAMWeigher"], group="filter_scheduler")
    result = upgrade_checks.Checks(conf).check_config()
    assert result.code == upgrade_checks.Code.SUCCESS
    assert result.details == (
        "driver filter_scheduler, filters ComputeFilter, RamFilter, "
        "CoreFilter, DiskFilter; weighers RAMWeigher: all load")
