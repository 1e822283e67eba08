"""RequestSpec: what one select_destinations call asks for, validated.

Two wire shapes are accepted (DESIGN.md "The request spec"): the current
``spec`` dict, and nova 4.0's legacy ``request_spec`` + ``filter_properties``
pair, which is translated to the current shape first. Both are then checked
against one JSON schema, so a bad field gives the same ``InvalidRequest``
naming it whichever shape it came in.
"""
from __future__ import annotations

from collections.abc import Mapping
import dataclasses
import re
from typing import Any
import uuid as uuidlib

import jsonschema
from oslo_utils import strutils

from scheduler import exception
from scheduler.hosts.state import disk_gb_of

MAX_LIST = 1000          # hosts, uuids, members: more is a mistake or abuse
MAX_STR = 255
POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")

#: Flavor extra-spec prefixes that ask nova's placement for resources or
#: traits (``resources:VGPU``, ``resources1:...``, ``trait:HW_CPU_X86_AVX2``)
#: or nova's NUMA / PCI filters for a layout (an explicit NUMA topology, a
#: CPU thread policy, huge pages, persistent memory: nova 34 gives each
#: instance a NUMA topology); none of it is modelled here, so such a request
#: is refused rather than placed as if it were not there.
UNSUPPORTED_EXTRA_SPECS = ("resources", "trait", "hw:numa_",
                           "pci_passthrough:", "hw:cpu_thread_policy",
                           "hw:mem_page_size", "hw:pmem")
#: Image properties asking for the same things.
UNSUPPORTED_IMAGE_PROPS = ("traits_required", "trait:", "hw_numa_nodes",
                           "hw_numa_cpus", "hw_numa_mem",
                           "hw_cpu_thread_policy", "hw_mem_page_size")
#: The CPU policy extra spec and image property: any policy but ``shared``
#: (``dedicated``, ``mixed``) pins CPUs, which nova 34 places as PCPU
#: inventory on a host NUMA topology.
CPU_POLICY_EXTRA_SPEC = "hw:cpu_policy"
CPU_POLICY_IMAGE_PROP = "hw_cpu_policy"
_UNPINNED = (None, "", "shared")


def _given(value: Any) -> bool:
    return value not in (None, "")


def _true(value: Any) -> bool:
    return strutils.bool_from_string(value)


#: Extra specs that nova 34's scheduler turns into placement traits or
#: resources by itself (``ResourceRequest._translate_*`` in
#: nova/scheduler/utils.py, and its always-on request filters in
#: nova/scheduler/request_filter.py), with the values that do: a vTPM,
#: required secure boot, a maxphysaddr mode, memory encryption, a packed
#: virtqueue, ephemeral encryption, a virtio sound card. No host here
#: reports traits, so such a request is refused like ``trait:*``.
TRAIT_EXTRA_SPECS: Mapping[str, Any] = {
    "hw:tpm_version": _given,
    "os:secure_boot": lambda value: value == "required",
    "hw:maxphysaddr_mode": _given,
    "hw:mem_encryption": _true,
    "hw:virtio_packed_ring": _true,
    "hw:ephemeral_encryption": _true,
    "hw:sound_model": lambda value: value == "virtio",
}
#: The image properties nova 34 turns into traits the same way: each extra
#: spec's twin (``hw:tpm_version`` -> ``hw_tpm_version``), asking when the
#: extra spec would.
TRAIT_IMAGE_PROPS: Mapping[str, Any] = {
    key.replace(":", "_", 1): asks for key, asks in TRAIT_EXTRA_SPECS.items()}
#: Stateless firmware, an image property only, which nova reads only for a
#: UEFI image.
FIRMWARE_STATELESS_PROP = "hw_firmware_stateless"


def unsupported_extra_spec(key: str, value: Any) -> bool:
    """Whether flavor extra spec ``key`` = ``value`` asks for something
    this scheduler does not model (see ``UNSUPPORTED_EXTRA_SPECS``)."""
    if key == CPU_POLICY_EXTRA_SPEC:
        return value not in _UNPINNED
    if key in TRAIT_EXTRA_SPECS:
        return TRAIT_EXTRA_SPECS[key](value)
    return key.startswith(UNSUPPORTED_EXTRA_SPECS)


def unsupported_image_property(key: str, value: Any,
                               props: Mapping[str, Any] | None = None
                               ) -> bool:
    """Whether image property ``key`` = ``value`` (of the image's
    ``props``) asks for something this scheduler does not model; an unset
    (None, empty, false) one asks for nothing."""
    if value in (None, "", False):
        return False
    if key == CPU_POLICY_IMAGE_PROP:
        return value not in _UNPINNED
    if key == FIRMWARE_STATELESS_PROP:
        return _true(value) and (props or {}).get("hw_firmware_type") == "uefi"
    if key in TRAIT_IMAGE_PROPS:
        return TRAIT_IMAGE_PROPS[key](value)
    return key.startswith(UNSUPPORTED_IMAGE_PROPS)


_STR = {"type": "string", "maxLength": MAX_STR}
_OPT_STR = {"type": ["string", "null"], "maxLength": MAX_STR}
_UUID = {"type": "string", "pattern":
         "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
         "[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"}
_UUID_RE = re.compile(_UUID["pattern"])
#: Scheduler hints holding instance uuids (one, or a list of them): the
#: instances whose hosts SameHostFilter / DifferentHostFilter look at.
HOST_HINTS = ("same_host", "different_host")
_SIZE = {"type": "integer", "minimum": 0, "maximum": 2 ** 31 - 1}
_HOSTS = {"type": "array", "items": _STR, "maxItems": MAX_LIST}
_STR_MAP = {"type": "object", "maxProperties": MAX_LIST,
            "additionalProperties": {"type": ["string", "number", "boolean",
                                              "null"]}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "instance_uuids": {"type": "array", "items": _UUID, "minItems": 1,
                           "maxItems": MAX_LIST, "uniqueItems": True},
        "num_instances": {"type": "integer", "minimum": 1,
                          "maximum": MAX_LIST},
        "project_id": _OPT_STR,
        "user_id": _OPT_STR,
        "flavor": {
            "type": "object",
            "additionalProperties": False,
            "required": ["memory_mb", "vcpus", "root_gb"],
            "properties": {
                "name": _OPT_STR,
                "flavorid": {"type": ["string", "integer", "null"],
                             "maxLength": MAX_STR},
                "memory_mb": _SIZE, "vcpus": _SIZE, "root_gb": _SIZE,
                "ephemeral_gb": _SIZE, "swap": _SIZE,
                "extra_specs": _STR_MAP,
            },
        },
        "image": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {"id": _OPT_STR, "name": _OPT_STR,
                           "properties": _STR_MAP},
        },
        "availability_zone": _OPT_STR,
        "ignore_hosts": _HOSTS,
        "force_hosts": _HOSTS,
        "force_nodes": _HOSTS,
        "requested_destination": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {"host": _OPT_STR, "node": _OPT_STR,
                           "aggregates": {"type": ["array", "null"],
                                          "items": _STR,
                                          "maxItems": MAX_LIST}},
        },
        "scheduler_hints": {"type": ["object", "null"],
                            "maxProperties": 100},
        "instance_group": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["policies"],
            "properties": {
                "uuid": _UUID,
                "policies": {"type": "array", "minItems": 1, "maxItems": 1,
                             "items": {"enum": list(POLICIES)}},
                "hosts": _HOSTS,
                "members": {"type": "array", "items": _UUID,
                            "maxItems": MAX_LIST},
                "rules": {
                    "type": ["object", "null"],
                    "additionalProperties": False,
                    "properties": {"max_server_per_host": {
                        "type": "integer", "minimum": 1,
                        "maximum": MAX_LIST}},
                },
            },
        },
        "retry": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {
                "exc": {"type": ["string", "null"], "maxLength": 4096},
                "num_attempts": {"type": "integer", "minimum": 0},
                "hosts": {"type": "array", "maxItems": MAX_LIST,
                          "items": {"type": "array", "minItems": 2,
                                    "maxItems": 2,
                                    "items": _OPT_STR}},
            },
        },
        "return_alternates": {"type": "boolean"},
        "move": {"type": "boolean"},
    },
    "required": ["flavor"],
}
#: "integer" is an int, as the fast path and the code after it assume:
#: jsonschema's own also takes 2.0 (and True is never one).
_Validator = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: type(v) is int))
_VALIDATOR = _Validator(SCHEMA)


# -- the fast path ------------------------------------------------------
# jsonschema walks SCHEMA for every request (a few % of a worker's CPU at
# full load). Typical requests use a handful of fields with plain values:
# these checks accept such a spec only where SCHEMA certainly does (never
# the other way round), and anything they do not recognise goes through
# jsonschema, which alone words the errors. ``tests/unit/
# test_request_spec.py`` checks that "fast says valid" implies "schema says
# valid" over valid and broken specs.

def _size_ok(v: Any) -> bool:
    return type(v) is int and 0 <= v <= 2 ** 31 - 1


def check_utf8(where: str, value: str | None) -> None:
    """:raises InvalidRequest: naming ``where``, if ``value`` holds a lone
    surrogate or a NUL: JSON lets both through (``"\\ud800"``,
    ``"\\u0000"``); neither a database column (PostgreSQL takes no NUL in
    text) nor a uuid derived from it can take a surrogate."""
    if value is None:
        return
    if "\x00" in value:
        raise exception.InvalidRequest(
            f"{where}: {value[:60]!r} is not storable text (it holds a NUL "
            f"character)")
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise exception.InvalidRequest(
            f"{where}: {value[:60]!r} is not valid unicode (it holds a lone "
            f"surrogate)") from None


def _opt_str_ok(v: Any) -> bool:
    return v is None or (type(v) is str and len(v) <= MAX_STR)


def _hosts_ok(v: Any) -> bool:
    return type(v) is list and len(v) <= MAX_LIST and all(
        type(h) is str and len(h) <= MAX_STR for h in v)


def _str_map_ok(v: Any) -> bool:
    return type(v) is dict and len(v) <= MAX_LIST and all(
        x is None or type(x) in (str, int, float, bool) for x in v.values())


_FLAVOR_FIELDS: dict[str, Any] = {
    "name": _opt_str_ok, "memory_mb": _size_ok, "vcpus": _size_ok,
    "root_gb": _size_ok, "ephemeral_gb": _size_ok, "swap": _size_ok,
    "extra_specs": _str_map_ok,
    "flavorid": lambda v: v is None or (type(v) is int) or (
        type(v) is str and len(v) <= MAX_STR)}


def _flavor_ok(v: Any) -> bool:
    return (type(v) is dict and "memory_mb" in v and "vcpus" in v
            and "root_gb" in v and all(
                k in _FLAVOR_FIELDS and _FLAVOR_FIELDS[k](x)
                for k, x in v.items()))


def _uuids_ok(v: Any) -> bool:
    return (type(v) is list and 1 <= len(v) <= MAX_LIST
            and all(type(u) is str and _UUID_RE.search(u) for u in v)
            and len(set(v)) == len(v))


_FAST_FIELDS: dict[str, Any] = {
    "flavor": _flavor_ok,
    "instance_uuids": _uuids_ok,
    "num_instances": lambda v: type(v) is int and 1 <= v <= MAX_LIST,
    "project_id": _opt_str_ok, "user_id": _opt_str_ok,
    "availability_zone": _opt_str_ok,
    "ignore_hosts": _hosts_ok, "force_hosts": _hosts_ok,
    "force_nodes": _hosts_ok,
    "scheduler_hints": lambda v: v is None or (
        type(v) is dict and len(v) <= 100),
    "image": lambda v: v is None or (type(v) is dict and all(
        (k in ("id", "name") and _opt_str_ok(x))
        or (k == "properties" and _str_map_ok(x)) for k, x in v.items())),
    "return_alternates": lambda v: type(v) is bool,
    "move": lambda v: type(v) is bool,
}


def _surely_valid(spec: dict) -> bool:
    """True only if ``spec`` satisfies SCHEMA; False means "ask
    jsonschema", not "invalid"."""
    return "flavor" in spec and all(
        k in _FAST_FIELDS and _FAST_FIELDS[k](v) for k, v in spec.items())


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
    #: True: the consumers that hold claims are being moved (DESIGN.md
    #: "Moves"); False: a re-send of what they hold is a retry. None: not
    #: said by the caller (nova's 4.x API), so ``moves.is_move`` infers it.
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
        """The instance uuids of hint ``name`` (one of HOST_HINTS),
        normalized (lower case with dashes, as claims store them)."""
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
        if not isinstance(spec, dict):
            raise exception.InvalidRequest(
                f"spec: expected an object, got {type(spec).__name__}")
        error = None if _surely_valid(spec) else \
            jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(spec))
        if error is not None:
            path = ".".join(["spec", *(str(p)[:60]
                                       for p in error.absolute_path)])
            raise exception.InvalidRequest(f"{path}: {_describe(error)}")
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
        try:
            uuids = [str(uuidlib.UUID(u)) for u in uuids]
        except ValueError:
            # The schema's pattern ends in "$", which lets a trailing
            # newline through.
            raise exception.InvalidRequest(
                "spec.instance_uuids: not all items are uuids") from None
        if len(set(uuids)) != len(uuids):
            # The schema's uniqueItems compares the strings as sent; "ABC…"
            # and "abc…" are one consumer, which would hold two claims.
            raise exception.InvalidRequest(
                "spec.instance_uuids: the same uuid is given more than once "
                "(uuids compare case-insensitively, dashes optional)")
        _check_aggregates(spec.get("requested_destination"))
        _check_supported(spec)
        flavor = dict(spec["flavor"])
        hints = _host_hints(spec.get("scheduler_hints") or {})
        group = _group_from_hint(hints, spec.get("instance_group"))
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


def canonical_uuid(value: str, field: str) -> str:
    """``value`` as claims store uuids (lower case, with dashes).

    :raises InvalidRequest: naming ``field`` (the schema's pattern lets a
        trailing newline through).
    """
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        raise exception.InvalidRequest(
            f"{field}: {value[:60]!r} is not a uuid") from None


def host_key(host: str) -> str:
    """``host`` as requests name hosts: without regard to case (nova's
    host_manager lower-cases ``ignore_hosts`` and ``force_hosts``); node
    names match exactly."""
    return host.lower()


def _members(members: list[str]) -> tuple[str, ...]:
    """Group members as claims store consumer uuids (canonical), once each.

    :raises InvalidRequest: naming a member that is not a uuid (the
        schema's pattern lets a trailing newline through).
    """
    return tuple(dict.fromkeys(
        canonical_uuid(member, f"spec.instance_group.members.{i}")
        for i, member in enumerate(members)))


def _group_from_hint(hints: dict[str, Any], group: dict[str, Any] | None
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
    if not isinstance(value, str) or not _UUID_RE.fullmatch(value):
        raise exception.InvalidRequest(
            f"{field}: {str(value)[:60]!r} is not a server group uuid")
    value = str(uuidlib.UUID(value))
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


def _check_supported(spec: dict[str, Any]) -> None:
    """Refuse what would otherwise pass validation and be ignored: extra
    specs and image properties for placement resources and traits, NUMA
    layouts and PCI devices.

    :raises InvalidRequest: naming the first such key.
    """
    for key, value in (spec["flavor"].get("extra_specs") or {}).items():
        if unsupported_extra_spec(key, value):
            raise exception.InvalidRequest(
                f"spec.flavor.extra_specs.{key[:60]}: not supported by this "
                f"scheduler (no placement resources or traits, NUMA, CPU "
                f"pinning, huge pages or PCI)")
    props = (spec.get("image") or {}).get("properties") or {}
    for key, value in props.items():
        if unsupported_image_property(key, value, props):
            raise exception.InvalidRequest(
                f"spec.image.properties.{key[:60]}: not supported by this "
                f"scheduler (no placement traits, NUMA, CPU pinning or huge "
                f"pages)")


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


def _host_hints(hints: dict[str, Any]) -> dict[str, Any]:
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
            if not isinstance(item, str) or not _UUID_RE.fullmatch(item):
                raise exception.InvalidRequest(
                    f"{field}: {str(item)[:60]!r} is not an instance uuid")
            uuids.append(str(uuidlib.UUID(item)))
        out[name] = list(dict.fromkeys(uuids))
    return out


def _describe(error: jsonschema.ValidationError) -> str:
    """A short reason: jsonschema's own messages repeat the offending value,
    which for an oversized list would flood the reply and the log."""
    value = error.instance
    if error.validator in ("maxItems", "minItems") and isinstance(value, list):
        bound = "at most" if error.validator == "maxItems" else "at least"
        return f"has {len(value)} items, {bound} {error.validator_value} allowed"
    if error.validator == "maxProperties" and isinstance(value, dict):
        return (f"has {len(value)} keys, at most {error.validator_value} "
                f"allowed")
    if error.validator == "maxLength" and isinstance(value, str):
        return (f"is {len(value)} characters long, at most "
                f"{error.validator_value} allowed")
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."


_LEGACY_FLAVOR_KEYS = ("name", "flavorid", "memory_mb", "vcpus", "root_gb",
                       "ephemeral_gb", "swap", "extra_specs")


def legacy_to_spec(request_spec: Any, filter_properties: Any) -> dict:
    """Translate nova's 4.0 dict pair into the current ``spec`` shape.

    Only the shape is checked here; values are left for the schema.
    :raises InvalidRequest: if either argument is not an object or the
        flavor (``instance_type``) is missing.
    """
    if not isinstance(request_spec, dict):
        raise exception.InvalidRequest("request_spec: expected an object")
    if filter_properties is None:
        filter_properties = {}
    if not isinstance(filter_properties, dict):
        raise exception.InvalidRequest(
            "filter_properties: expected an object")
    flavor = request_spec.get("instance_type") or filter_properties.get(
        "instance_type")
    if not isinstance(flavor, dict):
        raise exception.InvalidRequest(
            "request_spec.instance_type: the flavor is missing")
    props = request_spec.get("instance_properties") or {}
    if not isinstance(props, dict):
        raise exception.InvalidRequest(
            "request_spec.instance_properties: expected an object")
    spec: dict[str, Any] = {
        "flavor": {k: flavor[k] for k in _LEGACY_FLAVOR_KEYS if k in flavor},
        "project_id": props.get("project_id"),
        "user_id": props.get("user_id"),
        "availability_zone": props.get("availability_zone"),
    }
    if request_spec.get("image") is not None:
        image = request_spec["image"]
        spec["image"] = ({"id": image.get("id"),
                          "properties": image.get("properties") or {}}
                         if isinstance(image, dict) else image)
    uuids = request_spec.get("instance_uuids")
    num = request_spec.get("num_instances", 1)
    if uuids:
        spec["instance_uuids"] = uuids
        if "num_instances" in request_spec:
            spec["num_instances"] = num   # a mismatch is the schema's to name
    elif props.get("uuid") and num == 1:
        spec["instance_uuids"] = [props["uuid"]]
    else:
        spec["num_instances"] = num
    for key in ("ignore_hosts", "force_hosts", "force_nodes", "retry",
                "scheduler_hints"):
        if filter_properties.get(key) is not None:
            spec[key] = filter_properties[key]
    policies = filter_properties.get("group_policies")
    if policies:
        spec["instance_group"] = {
            "policies": _as_list(policies),
            "hosts": _as_list(filter_properties.get("group_hosts") or ()),
            "members": _as_list(filter_properties.get("group_members") or ()),
        }
    return spec


def _as_list(value: Any) -> Any:
    """A list for a list, tuple or set; anything else as it is, for the
    schema to name."""
    return list(value) if isinstance(value, (list, tuple, set, frozenset)) \
        else value
