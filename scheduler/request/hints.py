"""The scheduler hints a request carries that name other things: the
instances of ``same_host`` / ``different_host`` and the server group of
``group``, checked and normalized at the edge (canonical uuids, each
once), so filters and the claims compare them as claims store them.
"""
from __future__ import annotations

from typing import Any

from scheduler import exception
from scheduler.request.names import canonical_uuid
from scheduler.request.names import is_uuid
from scheduler.request.schema import MAX_LIST

#: Scheduler hints holding instance uuids (one, or a list of them): the
#: instances whose hosts SameHostFilter / DifferentHostFilter look at.
HOST_HINTS = ("same_host", "different_host")


def host_hints(hints: dict[str, Any]) -> dict[str, Any]:
    """``hints`` with ``same_host`` / ``different_host`` checked and
    normalized to a list of canonical uuids. Nova accepts one uuid or a
    list of them; anything else, or more than MAX_LIST, is refused here.

    :raises InvalidRequest: naming the hint, e.g.
        ``spec.scheduler_hints.same_host: 'x' is not an instance uuid``.
    """
    if not any(hints.get(name) is not None for name in HOST_HINTS):
        return dict(hints)
    out = dict(hints)
    for name in HOST_HINTS:
        value = hints.get(name)
        if value is None:
            continue
        field = f"spec.scheduler_hints.{name}"
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise exception.InvalidRequest(
                f"{field}: expected an instance uuid or a list of them, got "
                f"{type(value).__name__}")
        if len(value) > MAX_LIST:
            raise exception.InvalidRequest(
                f"{field}: has {len(value)} items, at most {MAX_LIST} "
                f"allowed")
        uuids = []
        for item in value:
            if not is_uuid(item):
                raise exception.InvalidRequest(
                    f"{field}: {str(item)[:60]!r} is not an instance uuid")
            uuids.append(canonical_uuid(item, field))
        out[name] = list(dict.fromkeys(uuids))
    return out


def group_from_hint(hints: dict[str, Any], group: dict[str, Any] | None
                    ) -> dict[str, Any] | None:
    """The server group, with the ``group`` scheduler hint taken into
    account instead of ignored. nova's API turns that hint (a group uuid)
    into the request's instance_group; this service does not know a
    group's policy from its uuid, so the hint alone is refused, and the
    hint names the group's uuid when instance_group has none (nova 4.0's
    legacy shape carries it only there).

    :raises InvalidRequest: naming ``spec.scheduler_hints.group`` when it
        is not a uuid, comes without instance_group, or names another
        group than instance_group.uuid.
    """
    value = hints.get("group")
    if isinstance(value, list) and len(value) == 1:
        value = value[0]      # nova's RequestSpec keeps hints as lists
    if value is None or value == "":
        return group
    field = "spec.scheduler_hints.group"
    if not is_uuid(value):
        raise exception.InvalidRequest(
            f"{field}: {str(value)[:60]!r} is not a server group uuid")
    value = canonical_uuid(value, field)
    if group is None:
        raise exception.InvalidRequest(
            f"{field}: the server group's policy is not known here; send "
            f"the group as instance_group with its uuid and policies")
    if not group.get("uuid"):
        return {**group, "uuid": value}
    if canonical_uuid(group["uuid"], "spec.instance_group.uuid") != value:
        raise exception.InvalidRequest(
            f"{field}: {value} is not instance_group.uuid "
            f"{group['uuid']}")
    return group
