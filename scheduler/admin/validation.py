"""What an operator's names and values must be before admin writes them:
not empty, no longer than their column, printable text (UTF-8, no NUL, no
control character), an availability zone nova could name, a metadata key
MariaDB tells apart from the aggregate's others; and a name only looked
up must at least be text a database can compare. Each check raises
:class:`~scheduler.exception.InvalidRequest` with the line the operator
is shown. :func:`escape` shows any text without its control characters
(the console scripts' tables and lines).
"""
from __future__ import annotations

from collections.abc import Iterable
import unicodedata

from scheduler import exception

#: Longest host, aggregate name, metadata key and value (the columns' size).
MAX_LENGTH = 255


#: Longest part of a value a message shows.
SHOWN = 60

#: Besides the C0 and C1 controls (category Cc: ESC starts the terminal's
#: escape sequences, NUL, newline, DEL...) and the line and paragraph
#: separators (a line break to some terminals): the bidirectional marks,
#: embeddings, overrides and isolates, which reorder what a terminal
#: shows around them ("Trojan Source"). nova's API refuses every one in a
#: name.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                  "\u2066\u2067\u2068\u2069")
#: The escapes ``repr`` writes for the commonest controls.
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def check_text(what: str, value: str, *, printable: bool = True) -> None:
    """A name or value to be written: not empty, no longer than the
    column, printable text (:func:`check_printable`).

    :param printable: False for a name only looked up (a metadata key to
        remove): then only :func:`check_name`'s checks.
    :raises InvalidRequest: naming ``what`` and the problem.
    """
    if not value:
        raise exception.InvalidRequest(f"{what} must not be empty")
    if len(value) > MAX_LENGTH:
        raise exception.InvalidRequest(
            f"{what} is longer than {MAX_LENGTH} characters")
    (check_printable if printable else check_name)(what, value)


def check_printable(what: str, value: str) -> None:
    """Text to be written and shown again: what :func:`check_name` takes,
    and no control character (:func:`is_control`), which would steer
    the terminal of whoever lists it (ESC) or break its table (newline).

    :raises InvalidRequest: naming ``what``, the value (escaped) and the
        first such character.
    """
    check_name(what, value)
    if not value.isprintable():   # else it holds none: the fast path
        for char in value:
            if is_control(char):
                raise exception.InvalidRequest(
                    f"{what} {_shown(value)}: holds a control character "
                    f"({escape(char)}); names and values must be "
                    f"printable text")


def check_name(what: str, value: str) -> None:
    """Text a database can store and compare: valid UTF-8 (an argument
    whose bytes are not arrives with surrogateescape, as a lone surrogate,
    which the drivers refuse with an error naming neither it nor the
    argument) and no NUL (PostgreSQL's text holds none; SQLite stores it).
    Control characters pass: a name only looked up may be one another
    tool stored with them, and naming it is how to reach (and remove) it.

    :raises InvalidRequest: naming ``what``, the value (escaped) and the
        problem.
    """
    if "\x00" in value:
        raise exception.InvalidRequest(
            f"{what} {_shown(value)}: holds a NUL character (\\x00), which "
            f"no database column can store")
    if value.isascii():
        return
    for char in value:
        if "\ud800" <= char <= "\udfff":
            byte = _escaped_byte(char)
            problem = (f"byte {byte}" if byte else
                       f"a lone surrogate, {escape(char)}")
            raise exception.InvalidRequest(
                f"{what} {_shown(value)}: not valid UTF-8 ({problem}); give "
                f"it as UTF-8 text")


def is_control(char: str) -> bool:
    """Whether ``char`` steers a terminal rather than shows: a C0 or C1
    control, a line or paragraph separator, a bidirectional control, or
    a lone surrogate (no character at all)."""
    return (unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp")
            or char in _BIDI)


def escape(text: str) -> str:
    """``text`` with each control character (:func:`is_control`) written
    as its escape, as ``repr`` would (``\\x1b``, ``\\n``, ``\\u202e``);
    a byte that was not UTF-8 (argv's surrogateescape) as that byte
    (``\\xff``). Everything else, backslashes included, is left as it is:
    this is for showing, not for reading back."""
    if text.isprintable():   # the fast path: nothing to escape
        return text
    return "".join(_escape_char(c) if is_control(c) else c for c in text)


def _escape_char(char: str) -> str:
    byte = _escaped_byte(char)
    if byte:
        return byte
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code <= 0xff:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xffff else f"\\U{code:08x}"


def _escaped_byte(char: str) -> str:
    """``\\xNN`` for the byte NN surrogateescape decoded ``char`` from
    (U+DC80 to U+DCFF), else ''."""
    code = ord(char)
    return f"\\x{code - 0xdc00:02x}" if 0xdc80 <= code <= 0xdcff else ""


def _shown(value: str) -> str:
    """``value`` quoted for a message, escaped, cut at :data:`SHOWN`."""
    cut = "..." if len(value) > SHOWN else ""
    return f"'{escape(value[:SHOWN])}{cut}'"


def check_zone(zone: str) -> None:
    """An availability zone nova's API could name (its ``az_name``
    format): not empty, no ':' (a request's ``zone:host:node`` forces a
    host), no blanks at either end.

    :raises InvalidRequest: naming the zone.
    """
    check_text("availability zone", zone)
    if ":" in zone or zone != zone.strip():
        raise exception.InvalidRequest(
            f"availability zone {zone!r} has a ':' or leading or trailing "
            f"blanks; nova could not name it in a request")


def check_same_key(key: str, keys: Iterable[str]) -> None:
    """nova reads metadata keys as dict keys (``availability_zone`` only
    so spelled), while MariaDB's unique key and comparisons take ``SSD``
    (or ``ssd ``, or ``sśd``) for ``ssd``: a key that differs from one of
    ``keys`` only so would overwrite the other on MariaDB (past the zone
    check, for ``availability_zone``) and be a second key on SQLite and
    PostgreSQL. Every database refuses it (nova's API does on MariaDB).

    :raises InvalidRequest: naming both keys.
    """
    folded = _folded_key(key)
    for other in keys:
        if other != key and _folded_key(other) == folded:
            raise exception.InvalidRequest(
                f"metadata key {key!r} differs from {other!r} only in "
                f"case, accents or trailing blanks, which MariaDB does not "
                f"tell apart; use {other!r}")


def _folded_key(key: str) -> str:
    """``key`` as MariaDB's default collations compare it: without regard
    to case or accents (``café`` is ``CAFE``), and (PAD SPACE) to
    trailing blanks."""
    decomposed = unicodedata.normalize("NFKD", key.rstrip(" "))
    return "".join(c for c in decomposed
                   if not unicodedata.combining(c)).casefold()
