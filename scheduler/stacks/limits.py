"""How much a template (or the flavors file) may be: its size in bytes,
and the values it expands to and how deep they nest once YAML's aliases
and Heat's get_param are expanded.

``yaml.safe_load`` shares what an alias names, so a few hundred bytes
(9 levels of 10 aliases, "billion laughs") load as a small object; but
whatever copies or serializes it (the template's resolution, the RPC
request's JSON) expands it to 10**9 values. A :class:`Budget` is spent
as values are visited, so such a document is refused once the limit is
reached, in the time and memory of the limit, never of the expansion.
"""
from __future__ import annotations

from typing import Any

from scheduler import exception

#: A file read larger than this is refused before it is parsed (Heat's
#: ``max_template_size`` default).
MAX_BYTES = 512 * 1024
#: Values (each item of a list, each entry of a mapping) a document may
#: expand to: about as many as a file of MAX_BYTES holds written out
#: (``-`` and a newline each), so only aliases or a get_param used many
#: times reach it.
MAX_VALUES = MAX_BYTES // 2
#: How deep values may nest: far beyond any template's few levels, far
#: below Python's recursion limit (YAML's composer and the resolution
#: recurse once or twice a level).
MAX_DEPTH = 100


def _short(where: str) -> str:
    """``where``, cut short: at the depth limit it is a hundred ``[0]``s
    long."""
    return where if len(where) <= 100 else where[:100] + "..."


class Budget:
    """The values one document may still expand to, spent as they are
    visited; shared by every reading of the document (each resource's
    properties, each condition) so the whole is bounded, not each part.

    :raises InvalidRequest: from :meth:`spend`, :meth:`enter` and
        :meth:`measure`, naming where the limit was passed and the limit.
    """

    def __init__(self, values: int | None = None,
                 depth: int | None = None) -> None:
        # Read at call time, not bound as defaults: tests lower them.
        self.limit = MAX_VALUES if values is None else values
        self.depth = MAX_DEPTH if depth is None else depth
        self.left = self.limit

    def spend(self, where: str, values: int = 1) -> None:
        """Count ``values`` more values, found at ``where``."""
        self.left -= values
        if self.left < 0:
            raise exception.InvalidRequest(
                f"{_short(where)}: expands to more than {self.limit} "
                f"values (YAML aliases and get_param repeat what they "
                f"name)")

    def enter(self, where: str, depth: int) -> None:
        """Check that a value may be at ``depth`` (the document's top
        is 0)."""
        if depth > self.depth:
            raise exception.InvalidRequest(
                f"{_short(where)}: nested more than {self.depth} deep")

    def measure(self, value: Any, where: str, depth: int = 0) -> None:
        """Spend what ``value``, at ``depth``, expands to: 1 for each value
        in it at any depth (the same object as often as it occurs), and
        check how deep they nest.

        Iterative, and a container's items are counted before they are
        queued: the queue never holds more than the budget, and an alias
        bomb is refused after at most the limit's worth of steps."""
        pending = [(value, depth)]
        while pending:
            value, depth = pending.pop()
            if isinstance(value, dict):
                items: Any = value.values()
            elif isinstance(value, (list, tuple, set, frozenset)):
                # Tuples: YAML's !!pairs and !!omap, whose values may be
                # aliases too.
                items = value
            else:
                continue
            if not items:
                continue
            self.enter(where, depth + 1)
            self.spend(where, len(items))
            pending.extend((item, depth + 1) for item in items)
