"""A configuration's values at one moment, read the way a ConfigOpts is.

SIGHUP changes the live ``ConfigOpts`` in place (``mutate_config_files``).
A request that read some options before and some after would run with a
mix of two configurations. Filters and weighers are therefore built with a
:func:`freeze` of the configuration, made when their set is loaded, and a
reload swaps in a new set with a new freeze (:class:`drivers.filter.Pipeline`).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from oslo_config import cfg


class FrozenGroup(Mapping):
    """One option group's values: ``group.option`` or ``group["option"]``."""

    def __init__(self, name: str, values: dict[str, Any]):
        self._name = name
        self._values = values

    def __getattr__(self, option: str) -> Any:
        try:
            return self.__dict__["_values"][option]
        except KeyError:
            raise cfg.NoSuchOptError(option, self.__dict__["_name"]) from None

    def __getitem__(self, option: str) -> Any:
        return self.__getattr__(option)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class FrozenConf:
    """Every option registered at freeze time, with its value then:
    ``conf.group.option``, ``conf.group["option"]``, ``conf.option``.

    An option or group registered later is not in it (NoSuchOptError).
    """

    def __init__(self, values: dict[str, Any]):
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise cfg.NoSuchOptError(name) from None

    def __getitem__(self, name: str) -> Any:
        return self.__getattr__(name)


def freeze(conf: cfg.ConfigOpts) -> FrozenConf:
    """The values of every option of ``conf`` now (lists copied)."""
    values: dict[str, Any] = {}
    for key in conf:
        value = conf[key]
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            values[key] = FrozenGroup(key, {
                option: _copy(value[option]) for option in value})
        else:
            values[key] = _copy(value)
    return FrozenConf(values)


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else \
        dict(value) if isinstance(value, dict) else value
