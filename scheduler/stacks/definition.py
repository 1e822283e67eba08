"""A stack's stored definition, read back: the consumers it records and
what changed from one definition to another.

A validated stack has one canonical JSON definition (``Stack.definition``):
two sends of one stack are the same stack exactly when their definitions
are equal, and :func:`changes` says what differs otherwise, as field paths
an operator can read.
"""
from __future__ import annotations

import json
from typing import Any


def consumers_of(definition: str) -> list[str]:
    """The consumer uuids recorded in a stored ``definition``."""
    doc = json.loads(definition)
    return [u for r in doc["resources"].values() if r["spec"]
            for u in r["spec"]["instance_uuids"]]


def changes(old: str, new: str, limit: int = 5) -> list[str]:
    """What differs from definition ``old`` to ``new``, as field paths
    (``resources.web.spec.flavor.vcpus: 1 -> 2``, ``resources.db added``),
    at most ``limit`` of them, then how many more."""
    found: list[str] = []
    _diff(json.loads(old), json.loads(new), "", found)
    if len(found) > limit:
        found = found[:limit] + [f"and {len(found) - limit} more"]
    return found


def _diff(old: Any, new: Any, path: str, found: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        inner: list[str] = []
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else key
            if key not in new:
                inner.append(f"{where} removed")
            elif key not in old:
                inner.append(f"{where} added")
            else:
                _diff(old[key], new[key], where, inner)
        # A flavor swapped for another changes all its fields: say so once.
        many = path.count(".") >= 2 and len(inner) > 2
        found.extend([f"{path} changed"] if many else inner)
    elif (isinstance(old, list) and isinstance(new, list) and old != new
          and _short(old) == _short(new)):
        # Cut alike (instance uuids): both sides would read the same.
        if len(old) != len(new):
            found.append(f"{path}: {len(old)} -> {len(new)} items")
        else:
            for i, (before, after) in enumerate(zip(old, new)):
                _diff(before, after, f"{path}.{i}", found)
    elif old != new:
        found.append(f"{path}: {_short(old)} -> {_short(new)}")


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
