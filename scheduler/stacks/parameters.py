"""A HOT template's ``parameters``, as Heat reads them: a
``comma_delimited_list``, ``json``, ``number`` or ``boolean`` parameter's
text (given or default) is the value it writes, and every value must hold
to its ``allowed_values``, ``length``, ``range`` and ``allowed_pattern``
constraints (``custom_constraint``, what exists in the cloud, is not
checked).
"""
from __future__ import annotations

import json
import re
from typing import Any

from scheduler import exception


def parameter_values(declared: Any, given: dict[str, Any],
                     defaults: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    """The template's parameter values: ``given`` (``--parameter``, the
    environment's ``parameters``, a nested template's properties), else
    the environment's ``defaults`` (Heat's ``parameter_defaults``: they
    replace a template's default, in every template of the stack), else
    each ``declared`` parameter's default, read as its ``type`` and checked
    against its constraints; a parameter with none of them has no value.
    :raises InvalidRequest: naming the parameter (one given not declared,
        text not of its type, a value outside its constraints)."""
    defaults = defaults or {}
    if not isinstance(declared, dict):
        raise exception.InvalidRequest("parameters: expected a mapping")
    for name in given:
        if name not in declared:
            raise exception.InvalidRequest(
                f"parameters.{name}: not a parameter of the template")
    values = {}
    for name, decl in declared.items():
        if name in given:
            values[name] = _typed(name, decl, given[name])
        elif name in defaults:
            values[name] = _typed(name, decl, defaults[name])
        elif isinstance(decl, dict) and "default" in decl:
            values[name] = _typed(name, decl, decl["default"])
        else:
            continue
        if isinstance(decl, dict):
            _check_constraints(name, decl, values[name])
    return values


def _check_constraints(name: str, decl: dict, value: Any) -> None:
    """Heat's ``allowed_values``, ``length``, ``range`` and
    ``allowed_pattern`` constraints of parameter ``name`` on its ``value``
    (given or default); others (``custom_constraint``: what exists in
    the cloud) are not checked.
    :raises InvalidRequest: naming the parameter and the constraint."""
    where = f"parameters.{name}"
    constraints = decl.get("constraints") or []
    if not isinstance(constraints, list):
        raise exception.InvalidRequest(
            f"{where}.constraints: expected a list")
    items = value if isinstance(value, list) else [value]
    for constraint in constraints:
        if not isinstance(constraint, dict):
            raise exception.InvalidRequest(
                f"{where}.constraints: expected a list of mappings")
        allowed = constraint.get("allowed_values")
        if isinstance(allowed, list):
            for item in items:
                if item not in allowed:
                    raise exception.InvalidRequest(
                        f"{where}: {item!r} is not one of the "
                        f"allowed_values {allowed}")
        for kind in ("length", "range"):
            bounds = constraint.get(kind)
            if not isinstance(bounds, dict):
                continue
            try:
                measured = len(value) if kind == "length" else float(value)
            except (TypeError, ValueError):
                raise exception.InvalidRequest(
                    f"{where}: {str(value)[:60]!r} has no {kind}") from None
            low, high = bounds.get("min"), bounds.get("max")
            if not all(b is None or (isinstance(b, (int, float))
                                     and not isinstance(b, bool))
                       for b in (low, high)):
                raise exception.InvalidRequest(
                    f"{where}.constraints: {kind}: expected numbers as min "
                    f"and max, got {str(bounds)[:60]}")
            if (low is not None and measured < low) or (
                    high is not None and measured > high):
                shown = (f"length {measured}" if kind == "length"
                         else repr(value))
                raise exception.InvalidRequest(
                    f"{where}: {shown} is not within {kind} {bounds}")
        pattern = constraint.get("allowed_pattern")
        if isinstance(pattern, str):
            try:
                compiled = re.compile(pattern)
            except re.error as e:
                raise exception.InvalidRequest(
                    f"{where}.constraints: allowed_pattern {pattern!r}: "
                    f"{e}") from None
            for item in items:
                if not (isinstance(item, str)
                        and compiled.fullmatch(item)):
                    raise exception.InvalidRequest(
                        f"{where}: {item!r} does not match "
                        f"allowed_pattern {pattern!r}")


def _typed(name: str, decl: Any, value: Any) -> Any:
    """``value`` of parameter ``name`` as its declared ``type`` reads it:
    text (from ``--parameter``, or a default written as text) becomes the
    list, mapping, number or boolean it writes, as in Heat.
    :raises InvalidRequest: the text is not of the type, naming ``name``."""
    kind = decl.get("type") if isinstance(decl, dict) else None
    if not isinstance(value, str):
        return value
    where = f"parameters.{name}"
    if kind == "comma_delimited_list":
        return [item.strip() for item in value.split(",")] if value else []
    if kind == "json":
        try:
            return json.loads(value) if value else {}
        except ValueError:
            raise exception.InvalidRequest(
                f"{where}: not JSON: {value[:60]!r}") from None
    if kind == "number":
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                raise exception.InvalidRequest(
                    f"{where}: not a number: {value[:60]!r}") from None
    if kind == "boolean":
        flag = value.strip().lower()
        if flag in ("true", "yes", "on", "1", "t", "y"):
            return True
        if flag in ("false", "no", "off", "0", "f", "n"):
            return False
        raise exception.InvalidRequest(
            f"{where}: not a boolean: {value[:60]!r}")
    return value
