"""What an operator's names and values must be before admin writes them:
not empty, no longer than their column, an availability zone nova could
name, a metadata key MariaDB tells apart from the aggregate's others.
Each check raises :class:`~scheduler.exception.InvalidRequest` with the
line the operator is shown.
"""
from __future__ import annotations

from collections.abc import Iterable
import unicodedata

from scheduler import exception

#: Longest host, aggregate name, metadata key and value (the columns' size).
MAX_LENGTH = 255


def check_text(what: str, value: str) -> None:
    """:raises InvalidRequest: ``value`` is empty or longer than the column.
    """
    if not value:
        raise exception.InvalidRequest(f"{what} must not be empty")
    if len(value) > MAX_LENGTH:
        raise exception.InvalidRequest(
            f"{what} is longer than {MAX_LENGTH} characters")


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
