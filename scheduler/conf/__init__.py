"""Configuration: one module per option group, registered on a ConfigOpts.

Code below the command layer never reads a global CONF; the ConfigOpts built
here is passed in to what needs it.
"""
import glob
import os

from oslo_config import cfg
from oslo_db import options as db_options

from scheduler.conf import default
from scheduler.conf import filter_scheduler
from scheduler.conf import metrics
from scheduler.conf import nova
from scheduler.conf import scheduler
from scheduler.conf import upgrade_levels

#: The embedded default: a SQLite file in the state directory.
DEFAULT_CONNECTION = "sqlite:///$state_path/scheduler.sqlite"

_MODULES = (default, scheduler, filter_scheduler, metrics, nova,
            upgrade_levels)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every option this service owns, plus oslo.db's, on ``conf``."""
    for module in _MODULES:
        module.register_opts(conf)
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)
    # oslo.messaging 18.x reads [oslo_messaging_tracing] and
    # [oslo_messaging_metrics] from the conf it is given on every send and
    # receive, but registers them only on the global cfg.CONF; a ConfigOpts
    # of our own needs them registered too.
    from oslo_messaging._metrics import client as metrics
    from oslo_messaging._tracing import client as tracing
    conf.register_opts(tracing.oslo_messaging_tracing,
                       group="oslo_messaging_tracing")
    conf.register_opts(metrics.oslo_messaging_metrics,
                       group="oslo_messaging_metrics")


def new_conf() -> cfg.ConfigOpts:
    """A fresh ConfigOpts with all options registered (tests, commands)."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    return conf


def load(argv: list[str], project: str = "scheduler",
         description: str | None = None,
         version: str | None = None) -> cfg.ConfigOpts:
    """Parse ``--config-file``/``--config-dir`` and friends from ``argv``
    into a new ConfigOpts with every option registered (and oslo.log's);
    ``version`` adds ``--version``."""
    from oslo_log import log as logging

    conf = new_conf()
    logging.register_options(conf)
    parse(conf, argv, project=project, description=description,
          default_config_files=[], version=version)
    return conf


def parse(conf: cfg.ConfigOpts, argv: list[str], **kwargs) -> None:
    """``conf(argv, **kwargs)``; a file that is not UTF-8 text (or is a
    directory) is a ConfigFileParseError naming it, as oslo.config names
    a syntax error, instead of a bare UnicodeDecodeError."""
    try:
        conf(argv, **kwargs)
    except (UnicodeDecodeError, IsADirectoryError) as e:
        paths = []
        for flag, value in zip(argv, argv[1:]):
            if flag == "--config-file":
                paths.append(value)
            elif flag == "--config-dir":
                paths += sorted(glob.glob(os.path.join(value, "*.conf")))
        for path in paths:
            try:
                with open(path, encoding="utf-8") as f:
                    f.read()
            except (UnicodeDecodeError, IsADirectoryError) as bad:
                raise cfg.ConfigFileParseError(
                    path, f"not a UTF-8 text file ({bad})") from None
        raise cfg.ConfigFileParseError(", ".join(paths), str(e)) from None
