"""The files ``scheduler-client stack`` reads: a YAML document (the
template) and the flavors file, each mistake named with its file."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scheduler import exception


def load_yaml(path: str | Path, what: str) -> Any:
    """The YAML document at ``path``.
    :raises InvalidRequest: unreadable, not UTF-8 or not YAML, naming
        ``what``."""
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except OSError as e:
        raise exception.InvalidRequest(
            f"{what} {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        # Raised by the file as YAML reads it, so not a YAMLError (its
        # offset is within the chunk read, not the file: not shown).
        raise exception.InvalidRequest(
            f"{what} {path}: not UTF-8 text") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise exception.InvalidRequest(
            f"{what} {path}: not valid YAML{line}") from None


def load_flavors(path: str | Path) -> dict[str, dict[str, Any]]:
    """Flavor name -> flavor fields, from a flavors file.
    :raises InvalidRequest: unreadable, or not a mapping of mappings."""
    doc = load_yaml(path, "flavors file")
    if not isinstance(doc, dict) or not all(
            isinstance(v, dict) for v in doc.values()):
        raise exception.InvalidRequest(
            f"flavors file {path}: expected a mapping of flavor names to "
            f"their fields")
    return {str(name): {"name": str(name), **fields}
            for name, fields in doc.items()}
