"""The aggregate-metadata minimum: the smallest value wins, a bad value
makes the default (logged once)."""
import logging

import pytest

from scheduler.hosts.aggregates import min_value


@pytest.mark.parametrize("values,expected", [
    (set(), 7.0), ({"2.5"}, 2.5), ({"3", "1.5", "2"}, 1.5),
    ({"2", "bad"}, 7.0), ({"bad"}, 7.0), ({""}, 7.0),
    # float() takes these, but no limit or multiplier is infinite or NaN
    # (a NaN's minimum would depend on the set's order).
    ({"nan"}, 7.0), ({"NaN", "3"}, 7.0), ({"inf"}, 7.0), ({"-inf", "2"}, 7.0)])
def test_min_value(values, expected):
    assert min_value(values, 7.0, float, "ratio") == expected


def test_min_value_with_int_rejects_fractions():
    assert min_value({"4", "2"}, 9, int) == 2
    assert min_value({"4.5"}, 9, int) == 9


def test_min_value_with_int_takes_numbers_beyond_float_range():
    huge = "9" * 400
    assert min_value({huge}, 9, int) == int(huge)
    assert min_value({huge, "4"}, 9, int) == 4


def test_bad_metadata_is_logged_once(caplog):
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        assert min_value({"x1"}, 1.0, float, "weird_ratio_key") == 1.0
    logged = [r for r in caplog.records if "weird_ratio_key" in r.getMessage()]
    assert len(logged) == 1
