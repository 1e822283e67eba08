"""Console entry points. Each parses its own flags with argparse and hands
``--config-file``/``--config-dir`` to oslo.config."""
from __future__ import annotations

import argparse

from oslo_config import cfg

from scheduler import conf as sched_conf


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
