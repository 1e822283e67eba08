"""A stack's environment, as Heat keeps it with the stack (its
``raw_template``'s environment) and reads it:

- ``parameters``: the root template's parameter values;
- ``parameter_defaults``: for a parameter of that name in the root
  template or in any nested one, the default, replacing the template's
  own (a value given still wins);
- ``resource_registry``: type name -> type name or template file name,
  for the whole stack (``"My::Server": server.yaml``; a mapping to
  another type is followed, ``"OS::Net::*": "OS::Neutron::*"`` maps every
  type of that prefix); its per-resource ``resources:`` section is not
  read, but refused where it would change what is placed;
- ``encrypted_param_names``: parameters Heat keeps encrypted, which cannot
  be read: refused;
- every other section (``event_sinks``, ``parameter_merge_strategies``)
  changes nothing placed, and is ignored.

Mistakes are ``InvalidRequest`` naming the field
(``environment.resource_registry.My::A: ...``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Collection

from scheduler import exception
from scheduler.stacks.servers import SERVER

RESOURCE_GROUP = "OS::Heat::ResourceGroup"
#: A type (or registry entry) naming a file with one of these suffixes is
#: a template resource (Heat's ``.yaml`` and ``.template``, and ``.yml``).
TEMPLATE_SUFFIXES = (".yaml", ".yml", ".template")
#: The sections of a per-resource registry entry that map no type.
_NOT_TYPES = ("hooks", "restricted_actions")


def is_template_name(name: str) -> bool:
    """Whether type ``name`` names a template file, as Heat tells one."""
    return name.endswith(TEMPLATE_SUFFIXES)


@dataclasses.dataclass(frozen=True)
class Kind:
    """A resource type as the registry resolves it: ``type`` is the type
    or the template file name it comes to, ``entry`` the registry entry
    that mapped it to that template (Heat takes that entry out of the
    nested template's registry, so a template wrapping the type it
    stands for gets the type itself)."""
    type: str
    entry: str | None = None


@dataclasses.dataclass(frozen=True)
class Environment:
    """The environment's sections that decide what is placed."""
    parameters: dict[str, Any] = dataclasses.field(default_factory=dict)
    defaults: dict[str, Any] = dataclasses.field(default_factory=dict)
    registry: dict[str, str] = dataclasses.field(default_factory=dict)


def read_environment(env: Any, files: Collection[str] = ()) -> Environment:
    """``env``, Heat's environment of a stack (None: an empty one);
    ``files``: the names of the stack's files (a registry entry mapping
    to one is a template).
    :raises InvalidRequest: a section that is not a mapping, encrypted
        parameters, a registry entry that is not a type or file name,
        a per-resource registry entry changing what is placed."""
    if env is None:
        return Environment()
    if not isinstance(env, dict):
        raise exception.InvalidRequest("environment: expected a mapping")
    encrypted = env.get("encrypted_param_names") or []
    if encrypted:
        names = (", ".join(map(str, encrypted)) if isinstance(
            encrypted, list) else str(encrypted))
        raise exception.InvalidRequest(
            f"environment.encrypted_param_names: parameters {names[:200]} "
            f"are kept encrypted by Heat (hidden parameters), and cannot "
            f"be read")
    sections = {key: _mapping(env, key) for key in (
        "parameters", "parameter_defaults", "resource_registry")}
    registry = {}
    where = "environment.resource_registry"
    for key, value in sections["resource_registry"].items():
        if key == "resources":
            continue
        if value is None:
            continue    # Heat's way of taking a mapping out
        if not isinstance(key, str) or not isinstance(value, str):
            raise exception.InvalidRequest(
                f"{where}.{key}: expected a type or a template file name, "
                f"got {str(value)[:60]!r}")
        registry[key] = value
    resources = sections["resource_registry"].get("resources") or {}
    _check_per_resource(resources, f"{where}.resources", registry, files)
    return Environment(parameters=sections["parameters"],
                       defaults=sections["parameter_defaults"],
                       registry=registry)


def _mapping(env: dict, key: str) -> dict:
    value = env.get(key) or {}
    if not isinstance(value, dict):
        raise exception.InvalidRequest(
            f"environment.{key}: expected a mapping")
    return value


def _check_per_resource(section: Any, where: str, registry: dict[str, str],
                        files: Collection[str]) -> None:
    """The per-resource part of the registry (resource name, or a
    glob of names, -> type -> type; nested stacks' resources under
    their resource's name) is not read: refused where it maps a server,
    a ResourceGroup or a template, or maps a type to one, which would
    change what is placed. Its hooks and the rest change nothing."""
    if not isinstance(section, dict):
        raise exception.InvalidRequest(f"{where}: expected a mapping")
    for key, value in section.items():
        if key in _NOT_TYPES or value is None:
            continue
        if isinstance(value, dict):
            _check_per_resource(value, f"{where}.{key}", registry, files)
            continue
        for name in (key, value):
            kind = resolve_type(str(name), registry, files, where)
            if kind.type in (SERVER, RESOURCE_GROUP) or is_template_name(
                    kind.type) or kind.type in files:
                raise exception.InvalidRequest(
                    f"{where}.{key}: a type mapped for one resource ("
                    f"{str(key)[:60]} -> {str(value)[:60]}) is not read, "
                    f"and this one changes what is placed (map the type "
                    f"for the whole stack instead)")


def resolve_type(name: str, registry: dict[str, str],
                 files: Collection[str], where: str) -> Kind:
    """Type ``name`` as the ``registry`` maps it, as Heat follows it: an
    entry for the type itself or a glob (``"OS::Net::*"``) matching it,
    the first of them by name as Heat sorts them; a mapping to another
    type followed in turn; a template file name (or a name in ``files``)
    ends it. A type the registry does not map is itself.
    :raises InvalidRequest: mappings that come back to a type, or go on
        longer than there are entries (a glob mapping to a longer name of
        its own prefix), naming them, at ``where``."""
    seen = [name]
    entry = None
    while not (is_template_name(name) or name in files):
        mapped = _mapped(name, registry)
        if mapped is None:
            break
        entry, name = mapped
        looped = name in seen or len(seen) > len(registry)
        seen.append(name)
        if looped:
            raise exception.InvalidRequest(
                f"{where}: resource_registry maps "
                f"{' -> '.join(seen)[:200]}, without end")
    return Kind(type=name, entry=entry if (
        is_template_name(name) or name in files) else None)


def _mapped(name: str, registry: dict[str, str]) -> tuple[str, str] | None:
    """(the registry entry mapping ``name``, what it maps it to), or
    None. A glob's ``*`` in what it maps to stands for what ``*``
    matched; a glob does not match what it maps to (``"OS::*":
    "OS::Heat::None"`` stops there)."""
    matches = sorted(key for key in registry if key == name or (
        key.endswith("*") and name.startswith(key[:-1])
        and registry[key] != name))
    if not matches:
        return None
    key = matches[0]
    value = registry[key]
    if key.endswith("*") and value.endswith("*"):
        value = value[:-1] + name[len(key) - 1:]
    return key, value
