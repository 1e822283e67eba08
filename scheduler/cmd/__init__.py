"""Console entry points. Each parses its own flags with argparse and hands
``--config-file``/``--config-dir`` to oslo.config."""
from __future__ import annotations

import argparse
from typing import Any, Mapping, Sequence

from oslo_config import cfg

from scheduler import conf as sched_conf


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
    parser.add_argument("--config-file", action="append", default=[],
                        metavar="PATH", help="configuration file (repeatable)")
    parser.add_argument("--config-dir", action="append", default=[],
                        metavar="DIR", help="directory of *.conf files")


def conf_from_args(args: argparse.Namespace) -> cfg.ConfigOpts:
    argv = []
    for path in args.config_file:
        argv += ["--config-file", path]
    for path in args.config_dir:
        argv += ["--config-dir", path]
    return sched_conf.load(argv)


def format_table(rows: Sequence[Mapping[str, Any]],
                 columns: Sequence[str]) -> str:
    """A plain-text table: a header line, a dashes line, one line per row.

    Each cell is ``str(row[column])``; a missing key or ``None`` is an empty
    cell. Columns are left-aligned, two spaces apart, trailing blanks cut.
    """
    cells = [["" if r.get(c) is None else str(r[c]) for c in columns]
             for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells])
              for i, c in enumerate(columns)]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()

    return "\n".join([line(columns), line(["-" * w for w in widths])]
                     + [line(row) for row in cells])
