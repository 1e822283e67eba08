"""The files ``scheduler-client stack`` reads: a YAML document (the
template, an environment) and the flavors file, each mistake named with
its file, each held to the limits of :mod:`scheduler.stacks.limits`
(size before it is parsed; values and depth, aliases expanded, once it
is); and YAML text (a nested template as Heat keeps it) held to the same
limits."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scheduler import exception
from scheduler.stacks import limits


class _TooDeep(Exception):
    """A node nested deeper than ``limits.MAX_DEPTH``."""


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing, as it composes, a node nested deeper
    than ``limits.MAX_DEPTH``: the composer recurses once a level, and a
    list nested 100,000 deep would otherwise end in a RecursionError
    after seconds of scanning ahead of it."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0   # of the node being composed; the top's is 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self._depth > limits.MAX_DEPTH:
            raise _TooDeep
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _yaml_problem(error: yaml.YAMLError) -> str:
    """`` (line N: what is wrong there)`` from the parser's error, as much
    of it as it has: its line names the place, its problem the fault."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    parts = ([f"line {mark.line + 1}"] if mark else []) + \
        ([" ".join(str(problem).split())] if problem else [])
    return f" ({': '.join(parts)})" if parts else ""


def load_yaml(path: str | Path, what: str) -> Any:
    """The YAML document at ``path``.
    :raises InvalidRequest: unreadable, larger than ``limits.MAX_BYTES``
        (checked before parsing), not UTF-8, not YAML, or expanding to
        more values or nesting deeper than the limits allow, naming
        ``what`` and the file."""
    name = f"{what} {path}"
    try:
        with open(path, "rb") as f:
            # One byte past the limit tells all: a 50 MB file is neither
            # read whole nor parsed.
            data = f.read(limits.MAX_BYTES + 1)
    except OSError as e:
        raise exception.InvalidRequest(f"{name}: {e.strerror}") from None
    return parse_yaml(data, name)


def parse_yaml(data: bytes | str, name: str) -> Any:
    """The YAML document ``data`` (a file's bytes, or text such as a
    nested template Heat keeps in a stack's ``files``), held to the
    limits as :func:`load_yaml` holds a file.
    :raises InvalidRequest: as :func:`load_yaml`, naming ``name`` (what
        the document is and where it comes from)."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate: no file's text, nor JSON's.
            raise exception.InvalidRequest(
                f"{name}: not UTF-8 text") from None
    if len(data) > limits.MAX_BYTES:
        raise exception.InvalidRequest(
            f"{name}: larger than the {limits.MAX_BYTES} bytes allowed")
    try:
        doc = yaml.load(data.decode("utf-8"), Loader=_Loader)
    except UnicodeDecodeError:
        # Its offset is in bytes, which a reader of the file as text does
        # not count in: not shown.
        raise exception.InvalidRequest(f"{name}: not UTF-8 text") from None
    except _TooDeep:
        raise exception.InvalidRequest(
            f"{name}: nested more than {limits.MAX_DEPTH} deep") from None
    except yaml.YAMLError as e:
        raise exception.InvalidRequest(
            f"{name}: not valid YAML{_yaml_problem(e)}") from None
    # Loaded, aliases are shared; whatever reads it next copies them.
    limits.Budget().measure(doc, name)
    return doc


def load_flavors(path: str | Path) -> dict[str, dict[str, Any]]:
    """Flavor name -> flavor fields, from a flavors file (read, and held to
    the limits, as a template is: :func:`load_yaml`).
    :raises InvalidRequest: unreadable, beyond the limits, or not a
        mapping of mappings."""
    doc = load_yaml(path, "flavors file")
    if not isinstance(doc, dict) or not all(
            isinstance(v, dict) for v in doc.values()):
        raise exception.InvalidRequest(
            f"flavors file {path}: expected a mapping of flavor names to "
            f"their fields")
    return {str(name): {"name": str(name), **fields}
            for name, fields in doc.items()}
