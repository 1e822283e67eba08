"""nova's extra-specs matcher: does a host's ``value`` satisfy ``req``?

The first word of ``req`` may be an operator; without one, ``value`` must
equal ``req`` exactly (as a whole string):

==========  ==========================================================
``=``       numeric **greater or equal** (nova's gotcha: not equality)
``==``      numeric equal; ``!=``, ``>=``, ``<=`` likewise numeric
``s==``     string equal; ``s!=``, ``s<``, ``s<=``, ``s>``, ``s>=``
``<in>``    the operand is a substring of ``value``
``<all-in>`` every operand word is a substring of ``value``
``<or>``    ``<or> a <or> b``: ``value`` equals one of the alternatives
==========  ==========================================================

A None ``value`` never matches. Where nova raised (an operator without an
operand, a numeric operator on text) the match is simply False.
``matcher`` parses a requirement once (cached), so filters can check many
hosts against it without re-parsing.
"""
from __future__ import annotations

from collections.abc import Callable
import functools
import operator

Matcher = Callable[[object], bool]

_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": operator.ge, "==": operator.eq, "!=": operator.ne,
    ">=": operator.ge, "<=": operator.le}
_STRING: dict[str, Callable[[str, str], bool]] = {
    "s==": operator.eq, "s!=": operator.ne, "s<": operator.lt,
    "s<=": operator.le, "s>": operator.gt, "s>=": operator.ge}
OPERATORS = frozenset(_NUMERIC) | frozenset(_STRING) | {
    "<in>", "<all-in>", "<or>"}


def _never(value: object) -> bool:
    return False


@functools.lru_cache(maxsize=4096)
def matcher(req: str) -> Matcher:
    """A predicate on host values equivalent to ``match(value, req)``."""
    words = req.split()
    op = words[0] if words else None
    operands = words[1:]
    if op not in OPERATORS:
        return lambda value: value is not None and value == req
    if op == "<or>":
        # "<or> a <or> b": the alternatives sit at every other word.
        alternatives = frozenset(operands[0::2])
        return lambda value: value is not None and value in alternatives
    if not operands:
        return _never
    if op == "<all-in>":
        return lambda value: value is not None and all(
            word in value for word in operands)
    operand = operands[0]
    if op == "<in>":
        return lambda value: value is not None and operand in value
    if op in _STRING:
        compare = _STRING[op]
        return lambda value: value is not None and compare(value, operand)
    try:
        number = float(operand)
    except ValueError:
        return _never
    compare_num = _NUMERIC[op]

    def numeric(value: object) -> bool:
        if value is None:
            return False
        try:
            return compare_num(float(value), number)
        except (TypeError, ValueError):
            return False
    return numeric


def match(value: str | None, req: str) -> bool:
    """Whether the host's ``value`` satisfies the requirement ``req``."""
    return matcher(req)(value)
