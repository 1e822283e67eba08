"""RequestSpec: what one select_destinations call asks for, validated.

Two wire shapes are accepted (``doc/source/architecture.rst`` "The
request spec"): the current
``spec`` dict, and nova 4.0's legacy ``request_spec`` + ``filter_properties``
pair, which is translated to the current shape first (``request.legacy``).
Both are then checked against one JSON schema (``request.schema``), so a
bad field gives the same ``InvalidRequest`` naming it whichever shape it
came in. What passes is built here into frozen dataclasses: the flavor
(and the disk it asks for), the server group, the request.
"""
from __future__ import annotations

from collections.abc import Mapping
import dataclasses
import math
from typing import Any
import uuid as uuidlib

from scheduler import exception
from scheduler.request import hints as hint_rules
from scheduler.request import schema
from scheduler.request.legacy import legacy_to_spec
from scheduler.request.names import canonical_uuid
from scheduler.request.names import is_uuid
from scheduler.request.schema import check_utf8
from scheduler.request.schema import MAX_LIST
from scheduler.request.unsupported import check_supported


def disk_gb_of(root_gb: int, ephemeral_gb: int, swap_mb: int) -> int:
    """Disk a flavor takes, in whole GB: swap (MB) rounded up, like nova's
    DiskFilter which counts swap against local disk."""
    return root_gb + ephemeral_gb + math.ceil(swap_mb / 1024)


@dataclasses.dataclass(frozen=True)
class Flavor:
    memory_mb: int
    vcpus: int
    root_gb: int
    ephemeral_gb: int = 0
    swap: int = 0
    name: str | None = None
    flavorid: str | int | None = None
    extra_specs: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def disk_gb(self) -> int:
        return disk_gb_of(self.root_gb, self.ephemeral_gb, self.swap)


@dataclasses.dataclass(frozen=True)
class InstanceGroup:
    """A server group. ``hosts`` has one entry per member already placed
    (a host appears as often as it holds members)."""
    policy: str
    uuid: str | None = None
    hosts: tuple[str, ...] = ()
    members: tuple[str, ...] = ()
    max_server_per_host: int = 1

    @property
    def is_hard(self) -> bool:
        return self.policy in ("affinity", "anti-affinity")


@dataclasses.dataclass(frozen=True)
class RequestSpec:
    instance_uuids: tuple[str, ...]
    flavor: Flavor
    project_id: str | None = None
    user_id: str | None = None
    image: dict[str, Any] = dataclasses.field(default_factory=dict)
    availability_zone: str | None = None
    ignore_hosts: tuple[str, ...] = ()
    force_hosts: tuple[str, ...] = ()
    force_nodes: tuple[str, ...] = ()
    requested_destination: dict[str, Any] | None = None
    scheduler_hints: dict[str, Any] = dataclasses.field(default_factory=dict)
    instance_group: InstanceGroup | None = None
    retry: dict[str, Any] | None = None
    return_alternates: bool = False
    #: True: the consumers that hold claims are being moved
    #: (architecture.rst "Moves"); False: a re-send of what they hold is a
    #: retry. None: not said by the caller (nova's 4.x API), so
    #: ``moves.is_move`` infers it.
    move: bool | None = False
    #: Not part of the request: filled in by the driver before planning
    #: (``Driver.with_hint_hosts``), one SQL query per request. Instance
    #: uuid from the ``same_host`` / ``different_host`` hints -> the hosts
    #: of the claims this service holds for it (a consumer holds one claim,
    #: so one host; empty if it holds none). Uuids not in it are on no host
    #: this service knows.
    hint_hosts: Mapping[str, tuple[str, ...]] = dataclasses.field(
        default_factory=dict)

    @property
    def num_instances(self) -> int:
        return len(self.instance_uuids)

    @property
    def is_rebuild(self) -> bool:
        """Nova's rebuild check (``_nova_check_type: ["rebuild"]``): run the
        filters on the instance's current host, claim nothing."""
        kind = (self.scheduler_hints or {}).get("_nova_check_type")
        return kind == "rebuild" or kind == ["rebuild"]

    def required_aggregates(self) -> tuple[frozenset[str], ...]:
        """``requested_destination.aggregates`` as nova means it: each entry
        is a comma-separated set of aggregates (uuids, or names here) of
        which the host must be in at least one; entries are ANDed."""
        dest = self.requested_destination or {}
        return tuple(frozenset(a.strip() for a in entry.split(","))
                     for entry in dest.get("aggregates") or ())

    def hinted_uuids(self, name: str) -> tuple[str, ...]:
        """The instance uuids of hint ``name`` (one of
        ``request.hints.HOST_HINTS``), normalized (lower case with dashes,
        as claims store them)."""
        return tuple((self.scheduler_hints or {}).get(name) or ())

    def hinted_hosts(self, name: str) -> set[str]:
        """The hosts of the instances of hint ``name``, as resolved in
        :attr:`hint_hosts`."""
        found = self.hint_hosts
        return {host for uuid in self.hinted_uuids(name)
                for host in found.get(uuid, ())}

    @classmethod
    def from_primitives(cls, spec: Any,
                        max_instances: int = MAX_LIST) -> RequestSpec:
        """Validate a ``spec`` dict and build the RequestSpec.

        :raises InvalidRequest: naming the first offending field, e.g.
            ``spec.flavor.memory_mb: -1 is less than the minimum of 0``.
        """
        schema.validate(spec)
        return cls._build(spec, max_instances)

    @classmethod
    def from_legacy(cls, request_spec: Any, filter_properties: Any,
                    max_instances: int = MAX_LIST) -> RequestSpec:
        """Build from nova 4.0's ``request_spec`` + ``filter_properties``.

        :raises InvalidRequest: as :meth:`from_primitives`, for the fields
            after translation (``spec.flavor`` is ``instance_type``).
        """
        return cls.from_primitives(
            legacy_to_spec(request_spec, filter_properties), max_instances)

    @classmethod
    def _build(cls, spec: dict, max_instances: int) -> RequestSpec:
        # What the claims store (the schema only knows they are strings).
        check_utf8("spec.project_id", spec.get("project_id"))
        check_utf8("spec.user_id", spec.get("user_id"))
        uuids = spec.get("instance_uuids")
        num = spec.get("num_instances")
        if uuids is not None and num is not None and num != len(uuids):
            raise exception.InvalidRequest(
                f"spec.num_instances: {num} does not match the "
                f"{len(uuids)} instance_uuids given")
        count = len(uuids) if uuids is not None else (num or 1)
        if count > max_instances:
            field = "instance_uuids" if uuids is not None else "num_instances"
            raise exception.InvalidRequest(
                f"spec.{field}: {count} instances requested, "
                f"at most {max_instances} allowed")
        if uuids is None:
            # Without consumer ids from the caller the claims get fresh ones;
            # such a request is not idempotent if re-sent.
            uuids = [str(uuidlib.uuid4()) for _ in range(count)]
        elif not all(is_uuid(u) for u in uuids):
            # The schema's pattern ends in "$", which lets a trailing
            # newline through.
            raise exception.InvalidRequest(
                "spec.instance_uuids: not all items are uuids")
        else:
            uuids = [canonical_uuid(u, "spec.instance_uuids") for u in uuids]
        if len(set(uuids)) != len(uuids):
            # The schema's uniqueItems compares the strings as sent; "ABC…"
            # and "abc…" are one consumer, which would hold two claims.
            raise exception.InvalidRequest(
                "spec.instance_uuids: the same uuid is given more than once "
                "(uuids compare case-insensitively, dashes optional)")
        _check_aggregates(spec.get("requested_destination"))
        check_supported(spec)
        flavor = dict(spec["flavor"])
        hints = hint_rules.host_hints(spec.get("scheduler_hints") or {})
        group = hint_rules.group_from_hint(hints,
                                           spec.get("instance_group"))
        return cls(
            instance_uuids=tuple(uuids),
            flavor=Flavor(**flavor),
            project_id=spec.get("project_id"),
            user_id=spec.get("user_id"),
            image=dict(spec.get("image") or {}),
            availability_zone=spec.get("availability_zone"),
            ignore_hosts=tuple(spec.get("ignore_hosts") or ()),
            force_hosts=tuple(spec.get("force_hosts") or ()),
            force_nodes=tuple(spec.get("force_nodes") or ()),
            requested_destination=spec.get("requested_destination"),
            scheduler_hints=dict(hints),
            instance_group=InstanceGroup(
                policy=group["policies"][0],
                # one group, one spelling: claims are grouped by it
                uuid=canonical_uuid(group["uuid"], "spec.instance_group.uuid")
                if group.get("uuid") else None,
                hosts=tuple(group.get("hosts") or ()),
                members=_members(group.get("members") or ()),
                max_server_per_host=(group.get("rules") or {}).get(
                    "max_server_per_host", 1))
            if group else None,
            retry=spec.get("retry"),
            return_alternates=bool(spec.get("return_alternates", False)),
            move=bool(spec.get("move", False)),
        )

    def to_primitive(self) -> dict[str, Any]:
        """The current wire shape of this spec (what clients send)."""
        out = dataclasses.asdict(self)
        del out["hint_hosts"]           # resolved here, never sent
        out["instance_uuids"] = list(self.instance_uuids)
        for key in ("ignore_hosts", "force_hosts", "force_nodes"):
            out[key] = list(out[key])
        group = self.instance_group
        out["instance_group"] = None if group is None else {
            "uuid": group.uuid, "policies": [group.policy],
            "hosts": list(group.hosts), "members": list(group.members),
            "rules": {"max_server_per_host": group.max_server_per_host}}
        if group is not None and group.uuid is None:
            del out["instance_group"]["uuid"]
        return out



def _members(members: list[str]) -> tuple[str, ...]:
    """Group members as claims store consumer uuids (canonical), once each.

    :raises InvalidRequest: naming a member that is not a uuid (the
        schema's pattern lets a trailing newline through).
    """
    return tuple(dict.fromkeys(
        canonical_uuid(member, f"spec.instance_group.members.{i}")
        for i, member in enumerate(members)))


def _check_aggregates(dest: dict[str, Any] | None) -> None:
    """Every ``requested_destination.aggregates`` entry names at least one
    aggregate and no empty one (``"a,,b"``), which would otherwise match
    no host and read as "no valid host" instead of a bad request.

    :raises InvalidRequest: naming the entry.
    """
    for i, entry in enumerate((dest or {}).get("aggregates") or ()):
        if any(not part.strip() for part in entry.split(",")):
            raise exception.InvalidRequest(
                f"spec.requested_destination.aggregates.{i}: {entry[:60]!r} "
                f"is not a comma-separated list of aggregate uuids or names")
