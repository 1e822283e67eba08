"""nova's extra-specs matcher: every operator on both sides of its
boundary."""
import pytest

from scheduler.filters.extra_specs_ops import match
from scheduler.filters.extra_specs_ops import matcher


@pytest.mark.parametrize("value,req,expected", [
    # no operator: exact string equality of the whole requirement
    ("QEMU", "QEMU", True),
    ("QEMU", "qemu", False),
    ("1", "1.0", False),
    ("a b", "a b", True),
    ("", "", True),
    # = is numeric greater-or-equal (nova's gotcha)
    ("4", "= 4", True),
    ("5", "= 4", True),
    ("3.9", "= 4", False),
    ("4.0", "= 4", True),
    # numeric ==, !=, >=, <=
    ("4.0", "== 4", True),
    ("5", "== 4", False),
    ("5", "!= 4", True),
    ("4", "!= 4.0", False),
    ("4", ">= 4", True),
    ("3", ">= 4", False),
    ("4", "<= 4", True),
    ("5", "<= 4", False),
    # string comparisons
    ("abc", "s== abc", True),
    ("abd", "s== abc", False),
    ("abd", "s!= abc", True),
    ("abc", "s!= abc", False),
    ("abb", "s< abc", True),
    ("abc", "s< abc", False),
    ("abc", "s<= abc", True),
    ("abd", "s<= abc", False),
    ("abd", "s> abc", True),
    ("abc", "s> abc", False),
    ("abc", "s>= abc", True),
    ("abb", "s>= abc", False),
    ("10", "s< 9", True),          # strings, not numbers
    # <in>: substring
    ("sse sse2 avx", "<in> avx", True),
    ("sse sse2", "<in> avx", False),
    ("sse2", "<in> sse", True),
    # <all-in>: every word a substring
    ("sse sse2 avx", "<all-in> sse avx", True),
    ("sse sse2", "<all-in> sse avx", False),
    # <or>: one of the alternatives
    ("b", "<or> a <or> b <or> c", True),
    ("c", "<or> a <or> b <or> c", True),
    ("d", "<or> a <or> b <or> c", False),
    ("a", "<or> a", True),
    ("<or>", "<or> a <or> b", False),
])
def test_operators(value, req, expected):
    assert match(value, req) is expected


@pytest.mark.parametrize("req", [
    "QEMU", "= 1", "== 1", "!= 1", ">= 1", "<= 1", "s== a", "s!= a",
    "s< a", "s<= a", "s> a", "s>= a", "<in> a", "<all-in> a", "<or> a"])
def test_none_never_matches(req):
    assert match(None, req) is False


@pytest.mark.parametrize("req", [
    "=", "==", "!=", ">=", "<=", "s==", "s<", "<in>", "<all-in>", "<or>"])
def test_operator_without_operand_is_false_not_an_error(req):
    assert match("anything", req) is False
    assert match("", req) is False


@pytest.mark.parametrize("value,req", [
    ("abc", "= 4"), ("4", "= abc"), ("abc", "== abc"), ("4", "!= x")])
def test_numeric_operator_on_text_is_false_not_an_error(value, req):
    assert match(value, req) is False


def test_surrounding_whitespace_in_operator_form_is_ignored():
    assert match("4", "  >=   4  ")
    # but not in the exact form, which compares the whole requirement
    assert not match("4", " 4")


def test_matcher_is_cached_and_reusable():
    m = matcher(">= 2")
    assert m is matcher(">= 2")
    assert [m(v) for v in ("1", "2", "3")] == [False, True, True]
