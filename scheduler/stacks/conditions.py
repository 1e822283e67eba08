"""A template's ``conditions`` and a resource's ``condition``, evaluated
as Heat evaluates them: ``equals``, ``not``, ``and``, ``or``,
``contains``, ``get_param``, a condition's name, true/false."""
from __future__ import annotations

from typing import Any

from scheduler import exception
from scheduler.stacks.functions import resolve
from scheduler.stacks.functions import Truth


#: The functions a condition may be (besides a name, true and false).
FUNCTIONS = ("equals", "not", "and", "or", "contains", "get_param")


def conditions(declared: Any, values: dict[str, Any]) -> Truth:
    """The truth of a condition (``condition:`` of a resource, or one of
    ``declared``, the template's ``conditions``), as Heat evaluates it."""
    if not isinstance(declared, dict):
        raise exception.InvalidRequest("conditions: expected a mapping")
    known: dict[str, bool] = {}
    evaluating: set[str] = set()

    def truth(value: Any, where: str) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            # A condition's name.
            if value not in declared:
                raise exception.InvalidRequest(
                    f"{where}: no condition {value!r}")
            if value not in known:
                if value in evaluating:
                    raise exception.InvalidRequest(
                        f"conditions.{value}: refers to itself")
                evaluating.add(value)
                known[value] = truth(declared[value], f"conditions.{value}")
            return known[value]
        if not (isinstance(value, dict) and len(value) == 1
                and next(iter(value)) in FUNCTIONS):
            raise exception.InvalidRequest(
                f"{where}: expected true, false, a condition's name or one "
                f"of {', '.join(FUNCTIONS)}, got "
                f"{str(value)[:60]!r}")
        (fn, arg), = value.items()
        if fn == "not":
            return not truth(arg, f"{where}.not")
        if fn in ("and", "or"):
            if not isinstance(arg, list) or len(arg) < 2:
                raise exception.InvalidRequest(
                    f"{where}.{fn}: expected a list of conditions")
            found = [truth(v, f"{where}.{fn}[{i}]")
                     for i, v in enumerate(arg)]
            return all(found) if fn == "and" else any(found)
        resolved = resolve(value, where, values, {}, set())
        if fn == "get_param":
            if not isinstance(resolved, bool):
                raise exception.InvalidRequest(
                    f"{where}: get_param: expected a boolean, got "
                    f"{str(resolved)[:60]!r}")
            return resolved
        if not isinstance(arg, list) or len(arg) != 2:
            raise exception.InvalidRequest(
                f"{where}.{fn}: expected a list of two values")
        a, b = (resolve(v, f"{where}.{fn}[{i}]", values, {}, set())
                for i, v in enumerate(arg))
        if fn == "equals":
            return a == b
        if not isinstance(b, list):
            raise exception.InvalidRequest(
                f"{where}.contains: expected a list to look in, got "
                f"{str(b)[:60]!r}")
        return a in b
    return truth
