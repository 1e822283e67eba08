"""Heat's functions in a template's values, resolved as Heat resolves
them: ``get_param`` (with a path into the value), ``{if: [condition, a,
b]}``, and ``get_resource`` / ``get_attr``, which are left in place and
collected as the resources the value depends on.

Mistakes are ``InvalidRequest`` naming where in the template they are.
"""
from __future__ import annotations

from typing import Any, Callable

from scheduler import exception
from scheduler.stacks.limits import Budget

#: A condition's truth: (condition, where it is) -> bool
#: (:func:`scheduler.stacks.conditions.conditions`).
Truth = Callable[[Any, str], bool]


def resolve(value: Any, where: str, values: dict[str, Any],
            types: dict[str, str], refs: set[str],
            truth: Truth | None = None, budget: Budget | None = None,
            depth: int = 0) -> Any:
    """``value`` with get_param replaced by the parameter's value and
    ``{if: [condition, a, b]}`` by ``a`` or ``b`` (``truth`` judges the
    condition, see :func:`scheduler.stacks.conditions.conditions`); the
    resources named by get_resource and get_attr are collected in
    ``refs``.

    Each value visited, and each value of what a get_param or get_attr
    gives, is spent from ``budget`` (one of its own if none), ``value``
    being at ``depth``: a template whose aliases or get_params expand
    it past the limits is refused as it is copied, not once copied.

    :raises InvalidRequest: naming where in the template a function is
        misused or the budget runs out."""
    if budget is None:
        budget = Budget()
    budget.enter(where, depth)
    budget.spend(where)
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn == "if" and truth is not None:
            if not isinstance(arg, list) or len(arg) != 3:
                raise exception.InvalidRequest(
                    f"{where}: if: expected [condition, value if true, "
                    f"value if false], got {str(arg)[:60]!r}")
            # Only the value chosen is resolved: Heat's if references
            # nothing in the branch not taken. One level deeper: an if
            # in an if in an if... must reach the depth limit too.
            chosen = arg[1] if truth(arg[0], f"{where}.if[0]") else arg[2]
            return resolve(chosen, where, values, types, refs, truth,
                           budget, depth + 1)
        if fn == "get_param":
            name = _known(arg[0] if isinstance(arg, list) and arg else arg,
                          values, where, fn, "a parameter name",
                          "no such parameter, or it has no value (no "
                          "default, none given)")
            found = _path(values[name], arg[1:] if isinstance(arg, list)
                          else [], f"{where}: get_param {name!r}")
            # Shared, not copied; but what serializes it copies it each
            # time it is named.
            budget.measure(found, where, depth)
            return found
        if fn == "get_resource":
            refs.add(_known(arg, types, where, fn, "a resource name",
                            "no such resource"))
            return {"get_resource": arg}
        if fn == "get_attr":
            # [resource, attribute, ...]: the resource must exist first,
            # as for get_resource (the attribute is left unresolved).
            if not isinstance(arg, list) or not arg:
                raise exception.InvalidRequest(
                    f"{where}: get_attr: expected [resource, attribute, "
                    f"...], got {str(arg)[:60]!r}")
            refs.add(_known(arg[0], types, where, fn, "a resource name "
                            "first", "no such resource"))
            # Left as it is, aliases and all: counted as they will be
            # copied.
            budget.measure(value, where, depth)
            return value
    if isinstance(value, dict):
        return {k: resolve(v, f"{where}.{k}", values, types, refs, truth,
                           budget, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, f"{where}[{i}]", values, types, refs, truth,
                        budget, depth + 1)
                for i, v in enumerate(value)]
    # A tuple or set (YAML's !!pairs, !!set) is not resolved, but may
    # hold aliases all the same.
    budget.measure(value, where, depth)
    return value


def _known(name: Any, known: dict[str, Any], where: str, fn: str,
           expected: str, unknown: str) -> str:
    """``name``, the argument of ``fn`` at ``where``, if it is a key of
    ``known``.

    :raises InvalidRequest: ``expected`` if it is not a string, else
        ``unknown``, naming ``fn`` and the name."""
    if not isinstance(name, str):
        raise exception.InvalidRequest(
            f"{where}: {fn}: expected {expected}, got {str(name)[:60]!r}")
    if name not in known:
        raise exception.InvalidRequest(f"{where}: {fn} {name!r}: {unknown}")
    return name


def _path(value: Any, path: list, where: str) -> Any:
    """``value`` followed along ``path`` (map keys, list indexes), as
    Heat's ``{get_param: [name, key, index, ...]}`` does."""
    for step in path:
        if isinstance(value, dict) and isinstance(step, (str, int)) \
                and step in value:
            value = value[step]
        elif isinstance(value, list) and type(step) is int \
                and -len(value) <= step < len(value):
            value = value[step]
        else:
            raise exception.InvalidRequest(
                f"{where}: no {str(step)[:60]!r} in {str(value)[:60]!r}")
    return value


def mapping(value: Any, where: str) -> dict:
    """``value``, which must be a mapping (else InvalidRequest naming
    ``where``, not a TypeError from whatever reads it)."""
    if not isinstance(value, dict):
        raise exception.InvalidRequest(
            f"{where}: expected a mapping, got {type(value).__name__}")
    return value
