"""The command line every console script shares: ``--config-file``,
``--config-dir`` and ``--version``; options accepted before or after a
sub-command; ``key=value`` arguments; arguments that must be text; and
loading the configuration the files name.
"""
from __future__ import annotations

import argparse
from collections.abc import Collection
from collections.abc import Iterator
from typing import Any

from oslo_config import cfg
from pbr import version as pbr_version

from scheduler.admin import validation
from scheduler import conf as sched_conf

#: The arguments that are file paths: a path need not be UTF-8 (the file
#: system takes its bytes back), nor reach anything that needs text.
PATHS = frozenset({"config_file", "config_dir"})


def version() -> str:
    """This package's version, as pbr derives it from git or metadata."""
    return pbr_version.VersionInfo("scheduler").version_string()


def version_line(command: str) -> str:
    """What ``--version`` prints, the same for every command:
    ``scheduler-manage 1.2.3``."""
    return f"{command} {version()}"


def key_value(text: str) -> tuple[str, str]:
    """argparse type for ``key=value``; the value may be empty or hold '='.

    :raises argparse.ArgumentTypeError: without '=' or with an empty key.
    """
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"expected key=value, got {text!r}")
    return key, value


def check_text(parser: argparse.ArgumentParser, args: argparse.Namespace,
               paths: Collection[str] = PATHS) -> None:
    """Every string argument ``parser`` parsed into ``args`` (``key=value``
    pairs included), but the paths (their ``dest`` in ``paths``), is text
    that can be sent and stored (:func:`scheduler.admin.validation.
    check_name`): argv's bytes that are not UTF-8 arrive as lone
    surrogates (surrogateescape), which would fail far from the command
    line, naming no argument.

    :raises InvalidRequest: naming the first such argument by its flag
        (or a positional by its metavar) and its value.
    """
    names = dict(_argument_names(parser))
    for dest, value in vars(args).items():
        if dest in paths or dest not in names:
            continue
        for text in _strings(value):
            validation.check_name(names[dest], text)


def _argument_names(parser: argparse.ArgumentParser
                    ) -> Iterator[tuple[str, str]]:
    """``(dest, name)`` of every argument of ``parser`` and of its
    sub-commands: an option's longest flag, a positional's metavar."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                yield from _argument_names(sub)
        elif action.option_strings:
            yield action.dest, max(action.option_strings, key=len)
        elif isinstance(action.metavar, str):
            yield action.dest, action.metavar
        else:
            yield action.dest, action.dest


def _strings(value: Any) -> Iterator[str]:
    """The strings of an argument's value: itself, those of a list
    (``append``, ``nargs``), or ``key=value`` of a :func:`key_value`
    pair."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple) and len(value) == 2 and all(
            isinstance(v, str) for v in value):
        yield "=".join(value)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """``--config-file``, ``--config-dir`` and ``--version``."""
    parser.add_argument("--config-file", action="append", default=[],
                        metavar="PATH", help="configuration file (repeatable)")
    parser.add_argument("--config-dir", action="append", default=[],
                        metavar="DIR", help="directory of *.conf files")
    parser.add_argument("--version", action="version",
                        version=version_line("%(prog)s"))


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
