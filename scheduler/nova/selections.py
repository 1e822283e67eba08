"""Replies to nova's select_destinations, in the shapes nova reads.

With ``return_objects`` (what nova's conductor always asks for): one list
per instance, ``[selected, alternate, ...]``, each a ``Selection`` 1.1
primitive. Without it (RPC 4.0-4.4): one ``{"host", "nodename", "limits"}``
dict per instance.
"""
from __future__ import annotations

from typing import Any, Callable
import uuid as uuidlib

#: Versions of the objects we write; nova 34 reads them as they are.
SELECTION_VERSION = "1.1"
LIMITS_VERSION = "1.0"
_LIMIT_KEYS = ("vcpu", "memory_mb", "disk_gb")
#: The namespace of the node uuids derived by :func:`node_uuid` (fixed:
#: every worker and server derives the same uuid for a node).
_NODE_NAMESPACE = uuidlib.UUID("5b0f6c3e-2f0d-4a8e-9c41-7d2e8b1a9f60")


def _primitive(name: str, version: str, data: dict[str, Any]
               ) -> dict[str, Any]:
    return {"nova_object.name": name, "nova_object.namespace": "nova",
            "nova_object.version": version, "nova_object.data": data,
            "nova_object.changes": sorted(data)}


def limits_primitive(limits: dict[str, float] | None
                     ) -> dict[str, Any] | None:
    """A ``SchedulerLimits`` primitive for our limits dict, or None when
    there are none (a forced host). Nova's fields are integers."""
    if not limits:
        return None
    data: dict[str, Any] = {"numa_topology": None}
    for key in _LIMIT_KEYS:
        value = limits.get(key)
        data[key] = None if value is None else int(value)
    return _primitive("SchedulerLimits", LIMITS_VERSION, data)


def node_uuid(choice: dict[str, Any], cell_uuid: str) -> str:
    """The uuid nova knows the node of ``choice`` by: its own, else one
    derived from the cell, host and node name.

    Nova's ``Selection.compute_node_uuid`` cannot be None (a reply with one
    such Selection, chosen or alternate, is unreadable to nova's conductor,
    after the claim was made), and nova gives every node a uuid when it
    creates it; our ``compute_nodes.uuid`` is nullable and an agent may
    leave it empty. The derived one is the same in every reply, from every
    worker and server, and names no other node of the cell.
    """
    given = choice.get("compute_node_uuid") or (
        choice.get("allocation") or {}).get("compute_node_uuid")
    if given:
        return given
    return str(uuidlib.uuid5(
        _NODE_NAMESPACE,
        f"{cell_uuid}\n{choice['host']}\n{choice['nodename']}"))


def selection_primitive(choice: dict[str, Any], cell_uuid: str
                        ) -> dict[str, Any]:
    """A ``Selection`` 1.1 primitive for one chosen or alternate host (our
    destination dict, or an alternate of one).

    ``availability_zone`` is left unset: nova then looks the host's zone
    up in its own aggregates, which is where a nova deployment keeps it.
    """
    return _primitive("Selection", SELECTION_VERSION, {
        "compute_node_uuid": node_uuid(choice, cell_uuid),
        "service_host": choice["host"],
        "nodename": choice["nodename"],
        "cell_uuid": cell_uuid,
        "limits": limits_primitive(choice.get("limits")),
        "allocation_request": None,
        "allocation_request_version": None,
    })


def reply(destinations: list[dict[str, Any]], return_objects: bool,
          cell_of: Callable[[str], str | None]) -> list:
    """The reply for our destinations (one per instance, in order);
    ``cell_of(host)`` is the uuid of the cell of a host.

    :raises ValueError: ``return_objects``, and a host without a cell.
    """
    if not return_objects:
        return [{"host": d["host"], "nodename": d["nodename"],
                 "limits": d.get("limits") or {}} for d in destinations]

    def selection(choice: dict[str, Any]) -> dict[str, Any]:
        cell = cell_of(choice["host"])
        if not cell:
            raise ValueError(f"host {choice['host']} has no cell")
        return selection_primitive(choice, cell)

    return [[selection(d)] + [selection(a)
                              for a in d.get("alternates") or ()]
            for d in destinations]
