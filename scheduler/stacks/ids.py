"""How a stack and its consumers are named.

- :func:`canonical_id`: the one reading of a stack id, for every method
  that takes one (select_stack, rank_stack, release_stack, a template's):
  the request's uuid rule (``request.names``), worded for a stack id.
- :func:`consumer_uuid`: the consumer uuid of an instance a spec does not
  name, derived from the stack id, the resource name and the instance's
  index (uuid5 in :data:`CONSUMER_NAMESPACE`), so sending the same stack
  again names the same consumers; :func:`with_consumers` gives a
  resource's spec its derived consumers.
"""
from __future__ import annotations

import dataclasses
from typing import Any
import uuid as uuidlib

from scheduler import exception
from scheduler.request.names import canonical_uuid
from scheduler.request.names import is_uuid
from scheduler.request.spec import RequestSpec

#: Consumer uuids derived here live in this namespace (uuid5).
CONSUMER_NAMESPACE = uuidlib.UUID("0b6f7c2e-5a1d-4c3e-9e2f-53a7c4d1e8b0")


def canonical_id(stack_id: Any, field: str = "stack_id") -> str:
    """``stack_id`` as the stack is known by (lower case, with dashes), so
    that everything derived from it (consumer and group uuids, the row)
    is the same however it was written.

    The one rule for reading a stack id, for every method that takes one
    (select_stack, rank_stack, release_stack, a template's): a string of
    32 hex digits, in either case, with or without the dashes of
    8-4-4-4-12; nothing around it.

    :raises InvalidRequest: ``{field}: expected a uuid ...`` for anything
        else.
    """
    # The request's uuid rule (scheduler.request.names), worded for a
    # stack id: one call must not accept an id another refuses.
    if not is_uuid(stack_id):
        raise exception.InvalidRequest(
            f"{field}: expected a uuid (32 hex digits, dashes optional), "
            f"got {stack_id!r}"[:200])
    return canonical_uuid(stack_id, field)


def consumer_uuid(stack_id: str, name: str, index: int) -> str:
    """The consumer uuid of instance ``index`` of resource ``name``."""
    return str(uuidlib.uuid5(CONSUMER_NAMESPACE,
                             f"{stack_id}/{name}/{index}"))


def with_consumers(stack_id: str, name: str, parsed: RequestSpec | None,
                   spec: dict | None) -> RequestSpec | None:
    """``parsed`` with the consumer uuids derived from the stack id and
    ``name``, unless its ``spec`` gave them."""
    if parsed is None or spec.get("instance_uuids"):
        return parsed
    return dataclasses.replace(parsed, instance_uuids=tuple(
        consumer_uuid(stack_id, name, i)
        for i in range(parsed.num_instances)))
