"""A stack's dependency graph, ordered the way Heat creates resources.

Heat (seed 000) builds a graph from ``depends_on`` and ``get_resource``
references and creates the resources batch by batch: first every resource
with no dependency, then every resource whose dependencies are all created,
and so on (Kahn's topological sort). Within a batch the names are sorted, so
the same stack always gives the same answer.
"""
from __future__ import annotations

from typing import Collection, Mapping

from scheduler import exception


def batches(deps: Mapping[str, Collection[str]]) -> list[list[str]]:
    """Creation batches for ``deps`` (resource name -> the names it depends
    on; every name referenced must be a key).

    :returns: lists of names, each resource after all its dependencies,
        names sorted within a batch.
    :raises InvalidRequest: on a dependency cycle, naming its path
        (``depends_on cycle: a -> b -> a``: a depends on b, b on a).
    """
    waiting = {name: len(set(on)) for name, on in deps.items()}
    dependents: dict[str, list[str]] = {name: [] for name in deps}
    for name, on in deps.items():
        for dep in set(on):
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
        path = " -> ".join(_cycle(deps, left))
        raise exception.InvalidRequest(f"depends_on cycle: {path}")
    return out


def _cycle(deps: Mapping[str, Collection[str]], left: set[str]) -> list[str]:
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
