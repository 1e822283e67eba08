"""How a request names things: uuids and hosts, one rule each.

- A **uuid** (a consumer, a server group, a stack, an instance in a nova
  cast) is a string of 32 hex digits, in either case, with or without the
  dashes of 8-4-4-4-12, and nothing around it (:func:`is_uuid`). Its
  canonical form, the one claims store and compare, is lower case with
  dashes (:func:`canonical_uuid`). ``uuid.UUID`` alone is not the rule: it
  also takes braces, a ``urn:uuid:`` prefix and dashes anywhere, which
  select_destinations never took; every RPC method reads ids here so that
  none accepts an id another refuses. Nova sends instance uuids in the
  canonical form, which is one of them.
- A **host** name is text of 1 to MAX_HOST characters, UTF-8 and no NUL
  (:func:`check_host`); it compares without regard to case
  (:func:`host_key`). A flag is a bool (:func:`check_bool`).
"""
from __future__ import annotations

import re
from typing import Any
import uuid as uuidlib

from scheduler import exception

_UUID = ("[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
         "[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_UUID_RE = re.compile(_UUID)
#: The rule as a JSON schema pattern, so the schema names the field. Its
#: "$" also matches before a trailing newline, which :func:`canonical_uuid`
#: refuses after the schema.
UUID_PATTERN = f"^{_UUID}$"


def is_uuid(value: Any) -> bool:
    """Whether ``value`` is a uuid as requests may write one (see the
    module's docstring)."""
    return isinstance(value, str) and _UUID_RE.fullmatch(value) is not None


def canonical_uuid(value: Any, field: str) -> str:
    """``value`` as claims store uuids (lower case, with dashes).

    :raises InvalidRequest: ``{field}: '...' is not a uuid``, naming the
        value, for anything :func:`is_uuid` refuses.
    """
    if not is_uuid(value):
        raise exception.InvalidRequest(
            f"{field}: {str(value)[:60]!r} is not a uuid")
    return str(uuidlib.UUID(value))


def host_key(host: str) -> str:
    """``host`` as requests name hosts: without regard to case (nova's
    host_manager lower-cases ``ignore_hosts`` and ``force_hosts``); node
    names match exactly."""
    return host.lower()


#: The longest host name (the ``services.host`` column).
MAX_HOST = 255


def check_host(what: str, host: Any) -> str:
    """``host``, a compute host name a request may carry.
    :raises InvalidRequest: naming ``what``: not text, empty, longer
        than the column, or holding NUL or bytes not UTF-8."""
    if not isinstance(host, str) or not 1 <= len(host) <= MAX_HOST:
        raise exception.InvalidRequest(
            f"{what}: expected a host name of 1 to {MAX_HOST} characters, "
            f"got {host!r}"[:200])
    try:
        host.encode("utf-8")
    except UnicodeEncodeError:
        raise exception.InvalidRequest(
            f"{what}: {host!r} is not UTF-8 text"[:200]) from None
    if "\x00" in host:
        raise exception.InvalidRequest(f"{what}: {host!r} holds NUL"[:200])
    return host


def check_bool(what: str, value: Any) -> None:
    """:raises InvalidRequest: ``value`` is not a bool, naming ``what``."""
    if not isinstance(value, bool):
        raise exception.InvalidRequest(
            f"{what}: expected true or false, got {value!r}"[:200])
