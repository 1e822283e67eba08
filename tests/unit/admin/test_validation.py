"""scheduler.admin.validation: what an operator's names and values must
be, and how a value that is not shown as itself."""
from __future__ import annotations

import pytest

from scheduler.admin import validation
from scheduler import exception

#: What ``bad\xffbyte`` in argv is to Python (surrogateescape).
BAD_BYTE = b"bad\xffbyte".decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("value, message", [
    (BAD_BYTE, r"aggregate name 'bad\xffbyte': not valid UTF-8 (byte "
               r"\xff); give it as UTF-8 text"),
    ("lone\ud800", r"aggregate name 'lone\ud800': not valid UTF-8 (a "
                   r"lone surrogate, \ud800); give it as UTF-8 text"),
    ("nul\x00x", r"aggregate name 'nul\x00x': holds a NUL character "
                 r"(\x00), which no database column can store"),
    ("esc\x1b[31mred", r"aggregate name 'esc\x1b[31mred': holds a control "
                       r"character (\x1b); names and values must be "
                       r"printable text"),
    ("new\nline", r"aggregate name 'new\nline': holds a control "
                  r"character (\n); names and values must be printable "
                  r"text"),
    ("del\x7f", r"aggregate name 'del\x7f': holds a control character "
                r"(\x7f); names and values must be printable text"),
    ("c1\x9b", r"aggregate name 'c1\x9b': holds a control character "
               r"(\x9b); names and values must be printable text"),
    ("ls\u2028x", r"aggregate name 'ls\u2028x': holds a control character "
                  r"(\u2028); names and values must be printable text"),
    ("rlo\u202ex", r"aggregate name 'rlo\u202ex': holds a control "
                   r"character (\u202e); names and values must be "
                   r"printable text")])
def test_check_text_refuses_what_is_not_printable_text(value, message):
    with pytest.raises(exception.InvalidRequest) as info:
        validation.check_text("aggregate name", value)
    assert info.value.message == message


@pytest.mark.parametrize("value", [
    "fast", "sśd café", "日本 ゾーン", "a b", "emoji 👍", "x" * 255])
def test_check_text_takes_printable_text(value):
    validation.check_text("aggregate name", value)


def test_check_text_shows_a_long_value_cut():
    with pytest.raises(exception.InvalidRequest) as info:
        validation.check_text("disabled reason", "x" * 100 + "\x1b")
    assert info.value.message.startswith(
        f"disabled reason '{'x' * 60}...': holds a control character "
        f"(\\x1b)")


def test_check_zone_refuses_a_control_character():
    with pytest.raises(exception.InvalidRequest) as info:
        validation.check_zone("az\t1")
    assert info.value.message.startswith(
        r"availability zone 'az\t1': holds a control character (\t)")


def test_check_name_lets_control_characters_through():
    """A name looked up (not written) may be one another tool stored with
    a control character: this is how an operator reaches that row."""
    validation.check_name("aggregate name", "esc\x1b")
    for value, problem in [(BAD_BYTE, "not valid UTF-8"),
                           ("nul\x00", "holds a NUL character")]:
        with pytest.raises(exception.InvalidRequest) as info:
            validation.check_name("host", value)
        assert problem in info.value.message


@pytest.mark.parametrize("text, shown", [
    ("plain text", "plain text"), ("café 日本", "café 日本"),
    ("esc\x1b[2Jx", r"esc\x1b[2Jx"), ("a\nb\tc\r", r"a\nb\tc\r"),
    (BAD_BYTE, r"bad\xffbyte"), ("\ud800", r"\ud800"),
    ("\x00\x7f\x9b", r"\x00\x7f\x9b"), ("\u2029\u202e", r"\u2029\u202e"),
    ("back\\slash", "back\\slash")])
def test_escape(text, shown):
    assert validation.escape(text) == shown
