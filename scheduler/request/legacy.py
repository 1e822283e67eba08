"""Nova 4.0's legacy ``request_spec`` + ``filter_properties`` pair,
translated to the current ``spec`` shape.

Only the shape is checked here; the translated spec then goes through the
one schema (``request.schema``), so a bad field gives the same
``InvalidRequest`` naming it whichever shape it came in
(``spec.flavor`` is ``instance_type``).
"""
from __future__ import annotations

from typing import Any

from scheduler import exception

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
