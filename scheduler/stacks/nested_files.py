"""A stack's files on disk, read as python-heatclient reads them for Heat:
the template with the nested templates its resources' types name, and
environment files (``-e``, merged in order) with the templates their
``resource_registry`` names.

A template file's name is taken relative to the directory of the file
naming it (or to an environment's ``resource_registry.base_url``); it is
read once, kept in the stack's files under its ``file://`` URL, and the
name in the file naming it becomes that URL, so that the stack's files
are what Heat would have been sent. Only local files are read: another
URL is left as it is (:func:`scheduler.stacks.template.to_stack` refuses
a template the files lack). Each file is held to the limits of
:func:`scheduler.stacks.files.load_yaml`; ``get_file`` targets are not
read (nothing placed depends on them).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urljoin
from urllib.parse import urlparse
from urllib.request import url2pathname

from scheduler import exception
from scheduler.stacks.environment import is_template_name
from scheduler.stacks.files import load_yaml


def load_template(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """The template at ``path`` and the stack's files: every template its
    resources' types name (``type: app.yaml``, a ResourceGroup's
    ``resource_def`` too), and those they name in turn, read.
    :raises InvalidRequest: a file unreadable or beyond the limits,
        naming it."""
    files: dict[str, Any] = {}
    template = load_yaml(path, "template")
    _nest(template, Path(path).resolve().as_uri(), files)
    return template, files


def load_environments(paths: Iterable[str | Path],
                      files: dict[str, Any]) -> dict[str, Any]:
    """The environment files at ``paths`` merged in order (a mapping's
    keys merged, any other value replaced, as python-heatclient merges
    them), each template its ``resource_registry`` names read into
    ``files``.
    :raises InvalidRequest: a file unreadable, beyond the limits or not a
        mapping, naming it."""
    merged: dict[str, Any] = {}
    for path in paths:
        env = load_yaml(path, "environment") or {}
        if not isinstance(env, dict):
            raise exception.InvalidRequest(
                f"environment {path}: expected a mapping")
        registry = env.get("resource_registry")
        if isinstance(registry, dict):
            base = registry.get("base_url")
            base = (base.rstrip("/") + "/" if isinstance(base, str)
                    else Path(path).resolve().as_uri())
            for key, value in registry.items():
                if isinstance(value, str) and is_template_name(value):
                    registry[key] = _read(value, base, files)
        merged = _merged(merged, env)
    return merged


def _merged(old: dict, new: dict) -> dict:
    """``old`` updated with ``new``, mappings in both merged in turn."""
    out = dict(old)
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _nest(value: Any, base: str, files: dict[str, Any]) -> None:
    """Reads the template each ``type`` in ``value`` (read from the file
    at URL ``base``) names, as python-heatclient does (any ``type`` key
    whose value names a template file), naming it by its URL instead.
    The file was held to the limits: walking it, aliases and all, is
    bounded by them."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "type" and isinstance(item, str) \
                    and is_template_name(item):
                value[key] = _read(item, base, files)
            else:
                _nest(item, base, files)
    elif isinstance(value, list):
        for item in value:
            _nest(item, base, files)


def _read(name: str, base: str, files: dict[str, Any]) -> str:
    """Template ``name`` (relative to the file at URL ``base``) read into
    ``files``, once, with those it names.
    :returns: its URL, or ``name`` if it is no local file."""
    url = urljoin(base, name)
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return name
    if url not in files:
        # In before it is read: a template naming itself is read once.
        files[url] = None
        files[url] = load_yaml(url2pathname(parsed.path), "template")
        _nest(files[url], url, files)
    return url
