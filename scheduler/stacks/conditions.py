"""A template's ``conditions`` and a resource's ``condition``, evaluated
as Heat evaluates them: ``equals``, ``not``, ``and``, ``or``,
``contains``, ``get_param``, a condition's name, true/false."""
from __future__ import annotations

from typing import Any

from scheduler import exception
from scheduler.stacks.functions import resolve
from scheduler.stacks.functions import Truth
from scheduler.stacks.limits import Budget


#: The functions a condition may be (besides a name, true and false).
FUNCTIONS = ("equals", "not", "and", "or", "contains", "get_param")


def conditions(declared: Any, values: dict[str, Any],
               budget: Budget | None = None) -> Truth:
    """The truth of a condition (``condition:`` of a resource, or one of
    ``declared``, the template's ``conditions``), as Heat evaluates it.

    The values its functions compare are spent from ``budget`` (the
    template's: one of its own if none); conditions nested, or naming
    conditions that name conditions, as deep as its depth limit.

    :raises InvalidRequest: from the truth, naming the condition at
        fault."""
    if not isinstance(declared, dict):
        raise exception.InvalidRequest("conditions: expected a mapping")
    if budget is None:
        budget = Budget()
    known: dict[str, bool] = {}
    evaluating: set[str] = set()

    def truth(value: Any, where: str, depth: int = 0) -> bool:
        # Each name followed is a level too: c1 naming c2 naming ... c5000
        # is no deeper in the YAML than a list, but recursed through.
        budget.enter(where, depth)
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
                known[value] = truth(declared[value], f"conditions.{value}",
                                     depth + 1)
            return known[value]
        if not (isinstance(value, dict) and len(value) == 1
                and next(iter(value)) in FUNCTIONS):
            raise exception.InvalidRequest(
                f"{where}: expected true, false, a condition's name or one "
                f"of {', '.join(FUNCTIONS)}, got "
                f"{str(value)[:60]!r}")
        (fn, arg), = value.items()
        if fn == "not":
            return not truth(arg, f"{where}.not", depth + 1)
        if fn in ("and", "or"):
            if not isinstance(arg, list) or len(arg) < 2:
                raise exception.InvalidRequest(
                    f"{where}.{fn}: expected a list of conditions")
            found = [truth(v, f"{where}.{fn}[{i}]", depth + 1)
                     for i, v in enumerate(arg)]
            return all(found) if fn == "and" else any(found)
        resolved = resolve(value, where, values, {}, set(), None, budget,
                           depth)
        if fn == "get_param":
            if not isinstance(resolved, bool):
                raise exception.InvalidRequest(
                    f"{where}: get_param: expected a boolean, got "
                    f"{str(resolved)[:60]!r}")
            return resolved
        if not isinstance(arg, list) or len(arg) != 2:
            raise exception.InvalidRequest(
                f"{where}.{fn}: expected a list of two values")
        a, b = (resolve(v, f"{where}.{fn}[{i}]", values, {}, set(), None,
                        budget, depth + 1)
                for i, v in enumerate(arg))
        if fn == "equals":
            return a == b
        if not isinstance(b, list):
            raise exception.InvalidRequest(
                f"{where}.contains: expected a list to look in, got "
                f"{str(b)[:60]!r}")
        return a in b
    return truth
