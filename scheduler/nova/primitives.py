"""Nova's versioned-object primitives, read into our request spec.

Nova sends its objects as oslo.versionedobjects primitives:
``{"nova_object.name": "Flavor", "nova_object.namespace": "nova",
"nova_object.version": "1.2", "nova_object.data": {...}}``, nested the same
way. This module reads the ones ``select_destinations`` carries (RequestSpec
and everything in it, and the 4.0 legacy pair) without importing nova, and
builds the ``spec`` dict of ``doc/source/architecture.rst`` "The request
spec", which
``RequestSpec.from_primitives`` then validates like any other request.

Two kinds of refusal, both naming the field:

- :class:`Unsupported`: a field asks for something this service cannot
  honour (NUMA, PCI, extra resource groups, traits). Never ignored: placing
  such an instance without it would break what the user asked for.
- ``InvalidRequest``: the primitive is not the shape nova sends.
"""
from __future__ import annotations

from typing import Any
import uuid as uuidlib

from scheduler import exception
from scheduler.request import legacy
from scheduler.request import unsupported

_NAME = "nova_object.name"
_DATA = "nova_object.data"

class Unsupported(Exception):
    """The request asks for something this service cannot honour; the
    message names the field."""


def unwrap(primitive: Any, name: str | tuple[str, ...], field: str
           ) -> dict[str, Any]:
    """The data of a versioned-object primitive of class ``name``.

    :raises InvalidRequest: ``primitive`` is not such a primitive.
    """
    names = (name,) if isinstance(name, str) else name
    if (not isinstance(primitive, dict) or primitive.get(_NAME) not in names
            or not isinstance(primitive.get(_DATA), dict)):
        got = (primitive.get(_NAME) if isinstance(primitive, dict)
               else type(primitive).__name__)
        raise exception.InvalidRequest(
            f"{field}: expected a {'/'.join(names)} object primitive, got "
            f"{str(got)[:60]!r}")
    return primitive[_DATA]


def _optional(data: dict, key: str, name: str | tuple[str, ...],
              field: str) -> dict[str, Any] | None:
    value = data.get(key)
    return None if value is None else unwrap(value, name, f"{field}.{key}")


def spec_from_request_spec(primitive: Any, instance_uuids: Any = None,
                           return_alternates: bool = False,
                           cell_uuid: str | None = None
                           ) -> dict[str, Any]:
    """Our ``spec`` dict for a ``RequestSpec`` primitive (RPC 4.3-4.5).

    ``instance_uuids`` (4.4+) are the consumers; without them the spec's
    ``instance_uuid`` is, for a single instance. ``cell_uuid`` is this
    service's cell (``[nova] cell_uuid``).
    :raises Unsupported: naming a field that cannot be honoured.
    :raises InvalidRequest: naming a field that is not what nova sends.
    :raises NoValidHost: the request is restricted to another cell.
    """
    data = unwrap(primitive, "RequestSpec", "spec_obj")
    _refuse_unsupported(data)
    field = "spec_obj"
    spec: dict[str, Any] = {
        "flavor": flavor_from(data.get("flavor"), f"{field}.flavor",
                              boot_from_volume=bool(data.get("is_bfv"))),
        "project_id": data.get("project_id"),
        "user_id": data.get("user_id"),
        "availability_zone": data.get("availability_zone"),
        "return_alternates": bool(return_alternates),
    }
    image = _optional(data, "image", "ImageMeta", field)
    if image is not None:
        spec["image"] = image_from(image, f"{field}.image")
    num = data.get("num_instances", 1)
    if instance_uuids:
        # As nova's scheduler: num_instances is the boot's batch size,
        # persisted and sent unchanged when one of its instances moves.
        spec["instance_uuids"] = instance_uuids
    elif data.get("instance_uuid") and num == 1:
        spec["instance_uuids"] = [data["instance_uuid"]]
    else:
        spec["num_instances"] = num
    for key in ("ignore_hosts", "force_hosts", "force_nodes"):
        if data.get(key) is not None:
            spec[key] = data[key]
    hints = data.get("scheduler_hints")
    if hints is not None:
        spec["scheduler_hints"] = hints_from(hints, f"{field}.scheduler_hints")
    group = _optional(data, "instance_group", "InstanceGroup", field)
    if group is not None:
        spec["instance_group"] = group_from(group)
    destination = _optional(data, "requested_destination", "Destination",
                            field)
    if destination is not None:
        spec["requested_destination"] = destination_from(
            destination, f"{field}.requested_destination", cell_uuid)
    retry = _optional(data, "retry", "SchedulerRetries", field)
    if retry is not None:
        spec["retry"] = retry_from(retry, f"{field}.retry")
    return spec


def spec_from_legacy(request_spec: Any, filter_properties: Any,
                     cell_uuid: str | None = None) -> dict[str, Any]:
    """Our ``spec`` dict for nova 34's 4.0 pair (what
    ``RequestSpec.to_legacy_request_spec_dict`` and
    ``to_legacy_filter_properties_dict`` make): ``instance_type`` and
    ``requested_destination`` arrive as object primitives, the server
    group as ``group_*`` keys.

    :raises Unsupported, InvalidRequest: as :func:`spec_from_request_spec`.
    """
    if not isinstance(request_spec, dict):
        raise exception.InvalidRequest("request_spec: expected an object")
    filter_properties = filter_properties or {}
    if not isinstance(filter_properties, dict):
        raise exception.InvalidRequest(
            "filter_properties: expected an object")
    request_spec = dict(request_spec)
    props = request_spec.get("instance_properties") or {}
    if isinstance(props, dict):
        for key in ("numa_topology", "pci_requests"):
            if _asks_for_something(props.get(key)):
                raise Unsupported(
                    f"request_spec.instance_properties.{key}: not supported "
                    f"by this scheduler")
    flavor = request_spec.get("instance_type")
    if isinstance(flavor, dict) and _NAME in flavor:
        request_spec["instance_type"] = flavor_from(
            flavor, "request_spec.instance_type")
    image = request_spec.get("image")
    if isinstance(image, dict) and _NAME in image:
        request_spec["image"] = image_from(
            unwrap(image, "ImageMeta", "request_spec.image"),
            "request_spec.image")
    elif isinstance(image, dict):
        # The legacy dict holds the image's properties as a plain dict.
        request_spec["image"] = {
            "id": image.get("id"), "name": image.get("name"),
            "properties": _plain_properties(image.get("properties") or {},
                                            "request_spec.image")}
    elif not image:
        request_spec.pop("image", None)
    spec = legacy.legacy_to_spec(request_spec, filter_properties)
    group_uuid = filter_properties.get("group_uuid")
    if spec.get("instance_group") is not None and group_uuid:
        spec["instance_group"]["uuid"] = group_uuid
    destination = filter_properties.get("requested_destination")
    if destination is not None:
        field = "filter_properties.requested_destination"
        spec["requested_destination"] = destination_from(
            unwrap(destination, "Destination", field), field, cell_uuid)
    return spec


def flavor_from(primitive: Any, field: str, boot_from_volume: bool = False
                ) -> dict[str, Any]:
    """Our flavor dict for a ``Flavor`` primitive. Booting from a volume
    (``is_bfv``) needs no root disk on the host."""
    data = unwrap(primitive, "Flavor", field)
    extra_specs = data.get("extra_specs") or {}
    if not isinstance(extra_specs, dict):
        raise exception.InvalidRequest(
            f"{field}.extra_specs: expected an object")
    for key, value in extra_specs.items():
        if isinstance(key, str) and unsupported.unsupported_extra_spec(
                key, value):
            raise Unsupported(f"{field}.extra_specs.{key}: not supported by "
                              f"this scheduler")
    flavor = {key: data[key] for key in (
        "name", "flavorid", "memory_mb", "vcpus", "root_gb", "ephemeral_gb",
        "swap") if key in data}
    flavor["extra_specs"] = extra_specs
    if boot_from_volume:
        flavor["root_gb"] = 0
    return flavor


def image_from(data: dict[str, Any], field: str) -> dict[str, Any]:
    """Our image dict for ``ImageMeta`` data: id, name and the properties
    (``ImageMetaProps``). List-valued properties become comma-separated
    strings, as the image service stores them."""
    props = _optional(data, "properties", "ImageMetaProps", field) or {}
    out = _plain_properties(props, field)
    return {"id": data.get("id"), "name": data.get("name"),
            "properties": out}


def _plain_properties(props: Any, field: str) -> dict[str, Any]:
    """Image properties as the image service stores them: list values as
    comma-separated strings.

    :raises Unsupported: a property asks for NUMA or traits.
    :raises InvalidRequest: not a dict of scalars and lists.
    """
    if not isinstance(props, dict):
        raise exception.InvalidRequest(f"{field}.properties: expected an "
                                       f"object")
    out: dict[str, Any] = {}
    for key, value in props.items():
        if value and unsupported.unsupported_image_property(
                key, value, props):
            raise Unsupported(f"{field}.properties.{key}: not supported by "
                              f"this scheduler")
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, dict):
            raise exception.InvalidRequest(
                f"{field}.properties.{key}: expected a scalar")
        out[key] = value
    return out


def hints_from(hints: Any, field: str) -> dict[str, Any]:
    """Nova's hints are lists of strings; a one-item list means the item
    (nova's ``get_scheduler_hint``), except the hints that name instances,
    which stay lists."""
    if not isinstance(hints, dict):
        raise exception.InvalidRequest(f"{field}: expected an object")
    out = {}
    for key, value in hints.items():
        if (isinstance(value, list) and len(value) == 1
                and key not in ("same_host", "different_host",
                                "_nova_check_type")):
            value = value[0]
        out[key] = value
    return out


def group_from(data: dict[str, Any]) -> dict[str, Any]:
    """Our instance_group for ``InstanceGroup`` data: ``policy`` (or the
    old ``policies`` list) and ``max_server_per_host`` from its rules."""
    policy = data.get("policy")
    policies = data.get("policies")
    if policy is None and isinstance(policies, list) and policies:
        policy = policies[0]
    group: dict[str, Any] = {
        "policies": [policy],
        # not a list: the schema names the field
        "hosts": data.get("hosts") or [],
        "members": data.get("members") or [],
    }
    if data.get("uuid"):
        group["uuid"] = data["uuid"]
    rules = data.get("_rules") or data.get("rules") or {}
    if isinstance(rules, dict) and rules.get("max_server_per_host"):
        try:
            group["rules"] = {"max_server_per_host": int(
                rules["max_server_per_host"])}
        except (TypeError, ValueError, OverflowError):
            raise exception.InvalidRequest(
                "spec_obj.instance_group.rules.max_server_per_host: "
                "expected an integer") from None
    return group


#: ``cell_uuid`` of the readers below with nova's databases as the host
#: source: hosts are in many cells, each cell's the members of the
#: aggregate :func:`cell_aggregate` names.
MANY_CELLS = "many-cells"
#: The namespace of the uuids of :func:`cell_aggregate`.
_CELL_NAMESPACE = uuidlib.UUID("0b4f2f4e-6a7c-4a5d-9d43-5a1f3c2e8b70")


def cell_aggregate(cell_uuid: str) -> str:
    """The uuid of the aggregate whose members are the hosts of nova's
    cell ``cell_uuid`` (written by :mod:`scheduler.novadb`): a request
    restricted to a cell asks for that aggregate."""
    return str(uuidlib.uuid5(_CELL_NAMESPACE, cell_uuid.lower()))


def destination_from(data: dict[str, Any], field: str,
                     cell_uuid: str | None = None) -> dict[str, Any]:
    """Our requested_destination for ``Destination`` data.

    Nova 34 looks only at the hosts of the destination's cell, unless a
    cross-cell move is allowed (``HostManager.get_host_states_by_uuids``).
    With ``cell_uuid`` :data:`MANY_CELLS`, the hosts of that cell are the
    request's: it asks for the cell's aggregate (:func:`cell_aggregate`).
    :raises NoValidHost: the destination is restricted to a cell other
        than ``cell_uuid`` (this service's one cell).
    """
    if data.get("forbidden_aggregates"):
        raise Unsupported(f"{field}.forbidden_aggregates: not supported by "
                          f"this scheduler")
    aggregates = data.get("aggregates")
    cell = data.get("cell")
    if cell is not None and cell_uuid and not data.get(
            "allow_cross_cell_move"):
        wanted = unwrap(cell, "CellMapping", f"{field}.cell").get("uuid")
        if wanted and cell_uuid == MANY_CELLS:
            aggregates = [*(aggregates or ()),
                          cell_aggregate(str(wanted))]
        elif wanted and str(wanted).lower() != cell_uuid.lower():
            raise exception.NoValidHost(
                f"No valid host: {field}.cell is {wanted} and no cross-cell "
                f"move is allowed; this scheduler places in cell "
                f"{cell_uuid} ([nova] cell_uuid)")
    return {"host": data.get("host"), "node": data.get("node"),
            "aggregates": aggregates}


def retry_from(data: dict[str, Any], field: str) -> dict[str, Any]:
    """Our retry for ``SchedulerRetries`` data: the hosts already tried, as
    ``[host, node]`` pairs, from its ``ComputeNodeList``."""
    hosts = []
    node_list = data.get("hosts")
    if node_list is not None:
        nodes = unwrap(node_list, "ComputeNodeList", f"{field}.hosts")
        objects = nodes.get("objects") or []
        if not isinstance(objects, list):
            raise exception.InvalidRequest(
                f"{field}.hosts.objects: expected a list")
        for i, node in enumerate(objects):
            node = unwrap(node, "ComputeNode", f"{field}.hosts.{i}")
            hosts.append([node.get("host"), node.get("hypervisor_hostname")])
    return {"num_attempts": data.get("num_attempts", 0), "hosts": hosts}


def _asks_for_something(value: Any) -> bool:
    """Whether a NUMA / PCI field asks for anything: a primitive with data,
    or a PCI request list with requests in it."""
    if not value:
        return False
    if isinstance(value, dict) and _NAME in value:
        data = value.get(_DATA) or {}
        if value.get(_NAME) == "InstancePCIRequests":
            return not isinstance(data, dict) or bool(data.get("requests"))
        return True
    return True


def _refuse_unsupported(data: dict[str, Any]) -> None:
    for key in ("numa_topology", "pci_requests"):
        if _asks_for_something(data.get(key)):
            raise Unsupported(f"spec_obj.{key}: not supported by this "
                              f"scheduler")
    if data.get("requested_resources"):
        raise Unsupported("spec_obj.requested_resources: not supported by "
                          "this scheduler")
    params = data.get("request_level_params")
    if params is not None:
        params = unwrap(params, "RequestLevelParams",
                        "spec_obj.request_level_params")
        for key in ("root_required", "root_forbidden", "same_subtree"):
            if params.get(key):
                raise Unsupported(
                    f"spec_obj.request_level_params.{key}: not supported by "
                    f"this scheduler")
