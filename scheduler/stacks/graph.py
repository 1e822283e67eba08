"""A stack's dependency graph, ordered the way Heat creates resources.

Heat (seed 000) builds a graph from ``depends_on`` and ``get_resource``
references and creates the resources batch by batch: first every resource
with no dependency, then every resource whose dependencies are all created,
and so on (Kahn's topological sort). Within a batch the names are sorted, so
the same stack always gives the same answer.
"""
from __future__ import annotations

from typing import Mapping

from scheduler import exception


def batches(deps: Mapping[str, Mapping[str, str]]) -> list[list[str]]:
    """Creation batches for ``deps`` (resource name -> {a name it waits
    for: the field that says so, ``depends_on``, ``same_host`` or
    ``different_host``}; every name referenced must be a key).

    :returns: lists of names, each resource after all its dependencies,
        names sorted within a batch.
    :raises InvalidRequest: on a cycle, naming its path and the fields
        that make it (``depends_on cycle: a -> b -> a``: a depends on b, b
        on a; ``depends_on/different_host cycle: ...`` with a relation on
        it; two resources relating each other are told that a relation
        orders the two, so it is named on one side only).
    """
    waiting = {name: len(on) for name, on in deps.items()}
    dependents: dict[str, list[str]] = {name: [] for name in deps}
    for name, on in deps.items():
        for dep in on:
            dependents[dep].append(name)
    ready = sorted(name for name, n in waiting.items() if n == 0)
    out: list[list[str]] = []
    while ready:
        out.append(ready)
        following = []
        for name in ready:
            for dependent in dependents[name]:
                waiting[dependent] -= 1
                if waiting[dependent] == 0:
                    following.append(dependent)
        ready = sorted(following)
    left = {name for name, n in waiting.items() if n > 0}
    if left:
        path = _cycle(deps, left)
        fields = sorted({deps[a][b] for a, b in zip(path, path[1:])})
        # Two resources relating each other: one side says it all.
        hint = " (a relation orders the two resources it relates: name " \
            "it on one of them only)" if len(path) == 3 and \
            "depends_on" not in fields else ""
        raise exception.InvalidRequest(
            f"{'/'.join(fields)} cycle: {' -> '.join(path)}{hint}")
    return out


def _cycle(deps: Mapping[str, Mapping[str, str]], left: set[str]
           ) -> list[str]:
    """One cycle among ``left`` (the resources Kahn could not order), as a
    path that ends where it starts. Every one of them still waits for a
    dependency that is also left, so following the smallest such
    dependency must come back to a resource already on the path."""
    path: list[str] = []
    seen: dict[str, int] = {}
    name = min(left)
    while name not in seen:
        seen[name] = len(path)
        path.append(name)
        name = min(dep for dep in deps[name] if dep in left)
    return path[seen[name]:] + [name]
