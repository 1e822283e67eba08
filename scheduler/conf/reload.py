"""SIGHUP's re-read of the configuration files: the mutable options take
their new values, and each change is logged with the values in force
before and after it.

oslo.config logs its own line per change, with the values the files
held: ``changed from [None] to [-2.0]`` for an option the files did not
set, whatever its default (1.0), and the text as written (``[true]``).
That line is dropped (:class:`_FileValuesLine`) for ours.
"""
from __future__ import annotations

import logging as pylogging
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: A change: ``(group, option)`` (group None for [DEFAULT]) to ``(old,
#: new)``, as ``cfg.ConfigOpts.mutate_config_files`` keys it.
Changes = dict[tuple[str | None, str], tuple[Any, Any]]

#: oslo.config's line (``ConfigOpts.mutate_config_files``).
_OSLO_LINE = ("Option %(group)s.%(option)s changed from [%(old_val)s] to "
              "[%(new_val)s]")


class _FileValuesLine(pylogging.Filter):
    """Drops oslo.config's change line, which shows the files' values
    (None for a default), not the options'."""

    def filter(self, record: pylogging.LogRecord) -> bool:
        return record.msg != _OSLO_LINE


def mutate(conf: cfg.ConfigOpts, log: bool = True) -> Changes:
    """``conf.mutate_config_files()``: the mutable options' changes with
    their values before and after (defaults included, typed); each logged
    at INFO as ``[group] option changed from OLD to NEW`` when ``log``.

    :raises cfg.Error: as ``mutate_config_files`` (a file that does not
        parse), or a new value that does not read (the server checks the
        files before: :meth:`scheduler.service.supervisor.Supervisor.
        _reload`).
    """
    oslo_logger = pylogging.getLogger(cfg.__name__)
    if not any(isinstance(f, _FileValuesLine) for f in oslo_logger.filters):
        oslo_logger.addFilter(_FileValuesLine())
    before = {key: _value(conf, *key) for key in _options(conf)}
    changes = {}
    for key in conf.mutate_config_files():
        group, option = key
        old = before.get(key)
        new = conf[option] if group is None else conf[group][option]
        if old == new:      # the text changed, not the value ("1", "1.0")
            continue
        changes[key] = (old, new)
        if log:
            LOG.info("[%s] %s changed from %r to %r", group or "DEFAULT",
                     option, old, new)
    return changes


def _options(conf: cfg.ConfigOpts) -> list[tuple[str | None, str]]:
    """Every registered option as ``(group, option)``."""
    keys: list[tuple[str | None, str]] = []
    for name in conf:
        if isinstance(_value(conf, None, name), cfg.ConfigOpts.GroupAttr):
            keys += [(name, option) for option in conf[name]]
        else:
            keys.append((None, name))
    return keys


def _value(conf: cfg.ConfigOpts, group: str | None, option: str) -> Any:
    """The option's value in force before a re-read; None if it cannot be
    read (a value that did not read would have refused the load)."""
    try:
        return conf[option] if group is None else conf[group][option]
    except (cfg.Error, ValueError):
        return None
