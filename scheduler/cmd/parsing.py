"""The command line every console script shares: ``--config-file``,
``--config-dir`` and ``--version``; options accepted before or after a
sub-command; ``key=value`` arguments; and loading the configuration the
files name.
"""
from __future__ import annotations

import argparse
from typing import Any

from oslo_config import cfg
from pbr import version as pbr_version

from scheduler import conf as sched_conf


def version() -> str:
    """This package's version, as pbr derives it from git or metadata."""
    return pbr_version.VersionInfo("scheduler").version_string()


def key_value(text: str) -> tuple[str, str]:
    """argparse type for ``key=value``; the value may be empty or hold '='.

    :raises argparse.ArgumentTypeError: without '=' or with an empty key.
    """
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"expected key=value, got {text!r}")
    return key, value


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """``--config-file``, ``--config-dir`` and ``--version``."""
    parser.add_argument("--config-file", action="append", default=[],
                        metavar="PATH", help="configuration file (repeatable)")
    parser.add_argument("--config-dir", action="append", default=[],
                        metavar="DIR", help="directory of *.conf files")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {version()}")


def add_to_every_command(parser: argparse.ArgumentParser, *flags: str,
                         **kwargs: Any) -> None:
    """Add an option to ``parser`` and to every (sub)command below it, so
    it is accepted before or after the command name (``service list
    --json`` as well as ``--json service list``). Sub-commands default to
    SUPPRESS so they never reset a value given earlier on the line."""
    parser.add_argument(*flags, **kwargs)
    sub_kwargs = dict(kwargs, default=argparse.SUPPRESS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _add_below(sub, flags, sub_kwargs)


def _add_below(parser: argparse.ArgumentParser, flags: tuple[str, ...],
               kwargs: dict[str, Any]) -> None:
    parser.add_argument(*flags, **kwargs)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _add_below(sub, flags, kwargs)


def conf_from_args(args: argparse.Namespace) -> cfg.ConfigOpts:
    """Load the configuration named by ``--config-file``/``--config-dir``.

    :raises cfg.Error: a file is missing, unreadable or malformed (see
        :mod:`scheduler.errors`).
    """
    argv = []
    for path in args.config_file:
        argv += ["--config-file", path]
    for path in args.config_dir:
        argv += ["--config-dir", path]
    return sched_conf.load(argv)
