"""JsonFilter: hosts that satisfy the ``query`` scheduler hint.

The hint is a JSON list in prefix notation (a JSON string, as nova's API
passes it, or the list itself; a list of one JSON string, nova's shape of
a hint, is that string)::

    ["and", [">=", "$free_ram_mb", 1024], ["in", "$hypervisor_type",
                                           "QEMU", "KVM"]]

Operators: ``=`` ``<`` ``>`` ``<=`` ``>=`` compare the first argument with
each of the others (all must hold; fewer than two arguments is false),
``in`` is true if the first argument equals one of the others, ``not``
negates each of its arguments, ``or`` / ``and`` combine theirs. A string
``$name`` is the HostState attribute ``name`` (nova's names such as
``free_disk_mb`` work too), ``$name.key`` goes into a dict attribute
(``$stats.foo``, ``$cpu_info.arch``); other strings, numbers and booleans
are literals. An argument that resolves to nothing (a missing attribute,
``null``, ``""``) is dropped, as in nova. An empty query passes every host.

A malformed query (not JSON, not a list, an unknown operator, an object as
an argument, nested deeper than 32 or longer than 1000 terms) raises
``InvalidRequest`` naming ``spec.scheduler_hints.query`` and the part that
is wrong; it is checked once per request, before any host is looked at.

Differences from nova, where nova was plainly wrong: comparing values that
do not compare (a number with a string under ``<``) is false instead of an
internal error, and the list that ``not`` produces counts as "any of it is
true" wherever it is used (nova treated ``["and", ["not", X]]`` as true
whatever X was, because a non-empty list is truthy).
"""
from __future__ import annotations

from collections.abc import Callable
import functools
import json
import operator
from typing import Any

from scheduler import exception
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter
from scheduler.filters.utils import lookup_path
from scheduler.filters.utils import scheduler_hint

FIELD = "spec.scheduler_hints.query"
MAX_DEPTH = 32
MAX_TERMS = 1000
_EXAMPLE = '[">=", "$free_ram_mb", 1024]'

Query = Callable[[Any], Any]


def _compare(op: Callable[[Any, Any], bool]) -> Callable[[list], bool]:
    def run(args: list) -> bool:
        if len(args) < 2:
            return False
        first = args[0]
        try:
            return all(op(first, other) for other in args[1:])
        except TypeError:
            return False
    return run


def _in(args: list) -> bool:
    return len(args) >= 2 and args[0] in args[1:]


def _not(args: list) -> list:
    return [not arg for arg in args]


OPERATORS: dict[str, Callable[[list], Any]] = {
    "=": _compare(operator.eq), "<": _compare(operator.lt),
    ">": _compare(operator.gt), "in": _in,
    "<=": _compare(operator.le), ">=": _compare(operator.ge),
    "not": _not, "or": any, "and": all}


def _invalid(where: str, what: str) -> exception.InvalidRequest:
    return exception.InvalidRequest(f"{FIELD}{where}: {what}")


def _truth(value: Any) -> Any:
    """A sub-query's result as an argument: ``not``'s list means any."""
    return any(value) if isinstance(value, list) else value


def _pass(host: Any) -> bool:
    return True


class _Compiler:
    def __init__(self) -> None:
        self.terms = 0

    def query(self, node: list, where: str, depth: int) -> Query:
        if depth > MAX_DEPTH:
            raise _invalid("", f"nested deeper than {MAX_DEPTH} levels")
        if not node:
            return _pass   # nova: an empty (sub-)query is true
        op = node[0]
        if not isinstance(op, str) or op not in OPERATORS:
            raise _invalid(f"{where}[0]", (
                f"unknown operator {json.dumps(op)[:40]}; expected one of "
                f"{' '.join(OPERATORS)}"))
        run = OPERATORS[op]
        args: list[tuple[bool, Any]] = []   # (is a function of the host, x)
        for i, arg in enumerate(node[1:], 1):
            self.terms += 1
            if self.terms > MAX_TERMS:
                raise _invalid("", f"more than {MAX_TERMS} terms")
            if isinstance(arg, list):
                sub = self.query(arg, f"{where}[{i}]", depth + 1)
                args.append((True, lambda h, sub=sub: _truth(sub(h))))
            elif isinstance(arg, dict):
                raise _invalid(f"{where}[{i}]", (
                    "an object is not a valid argument; use a literal, a "
                    "'$attribute' or a nested list"))
            elif isinstance(arg, str) and arg.startswith("$"):
                path = tuple(arg[1:].split("."))
                args.append((True, lambda h, path=path: lookup_path(
                    h, path, stats_fallback=False)))
            elif arg is not None and arg != "":
                args.append((False, arg))
        if all(not dynamic for dynamic, _ in args):
            value = run([arg for _, arg in args])
            return lambda host: value

        def evaluate(host: Any) -> Any:
            cooked = []
            for dynamic, arg in args:
                if dynamic:
                    arg = arg(host)
                    if arg is None:
                        continue
                cooked.append(arg)
            return run(cooked)
        return evaluate


def _compile(query: Any) -> Query | None:
    if not isinstance(query, list):
        raise _invalid("", (
            f"expected a JSON list such as {_EXAMPLE}, got "
            f"{type(query).__name__ if query is not None else 'null'}"))
    if not query:
        return None
    evaluate = _Compiler().query(query, "", 1)
    return lambda host: bool(_truth(evaluate(host)))


@functools.lru_cache(maxsize=256)
def _compile_text(text: str) -> Query | None:
    try:
        query = json.loads(text)
    except RecursionError:
        raise _invalid("", f"nested deeper than {MAX_DEPTH} levels") \
            from None
    except ValueError as e:
        raise _invalid("", f"not valid JSON ({e})"[:200]) from None
    return _compile(query)


def compile_query(query: Any) -> Query | None:
    """The hint as a predicate on hosts, None if it asks nothing.

    :raises InvalidRequest: naming what is wrong with it.
    """
    if query is None or query == "":
        return None
    if isinstance(query, str):
        return _compile_text(query)
    if isinstance(query, list):
        return _compile(query)
    raise _invalid("", (
        f"expected a JSON-encoded list such as '{_EXAMPLE}', got "
        f"{type(query).__name__}"))


class JsonFilter(RequestFilter):
    reason = "does not satisfy the query hint"

    def prepare(self, spec):
        query = compile_query(scheduler_hint(spec, "query"))
        return PASS_ALL if query is None else query

    def passes(self, host, query) -> bool:
        return query(host)

    def explain(self, spec) -> str:
        query = scheduler_hint(spec, "query")
        if query is None or query == "" or query == []:
            return self.reason
        if not isinstance(query, str):
            try:
                query = json.dumps(query)
            except (TypeError, ValueError):
                return self.reason
        if len(query) > 80:
            query = query[:77] + "..."
        return f"{self.reason} {query}"
