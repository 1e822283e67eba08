"""Configuration: one module per option group, registered on a ConfigOpts.

Code below the command layer never reads a global CONF; the ConfigOpts built
here is passed in to what needs it.
"""
import contextlib
import glob
import io
import os
import re
import sys

from oslo_config import cfg
from oslo_db import options as db_options

from scheduler.conf import default
from scheduler.conf import filter_scheduler
from scheduler.conf import heat
from scheduler.conf import metrics
from scheduler.conf import nova
from scheduler.conf import scheduler
from scheduler.conf import upgrade_levels

#: The embedded default: a SQLite file in the state directory.
DEFAULT_CONNECTION = "sqlite:///$state_path/scheduler.sqlite"

#: One module per option group: registered here, listed by ``opts``.
MODULES = (default, scheduler, filter_scheduler, metrics, nova, heat,
           upgrade_levels)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every option this service owns, plus oslo.db's, on ``conf``."""
    for module in MODULES:
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


#: Added to oslo.log's ``default_log_levels``: alembic logs the set-up of
#: each of its plugins at INFO whenever it reads the schema's revision,
#: which every server start and command does; nothing an operator can use.
_QUIET_LOGGERS = ["alembic.runtime.plugins=WARN"]


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
    levels = logging.get_default_log_levels()
    if _QUIET_LOGGERS[0] not in levels:
        logging.set_defaults(default_log_levels=levels + _QUIET_LOGGERS)
    logging.register_options(conf)
    parse(conf, argv, project=project, description=description,
          default_config_files=[], version=version)
    return conf


#: What oslo.config writes to stderr, before SystemExit(1), for a bad
#: value of an option that is also a command-line option (oslo.log's
#: ``debug``, ``use_syslog``...), wherever the value came from.
_BAD_CLI_VALUE = re.compile(r"argument --(?P<dest>\S+): Invalid "
                            r"(?P<type>.+?) value: (?P<value>.*)")


def _config_paths(argv: list[str]) -> list[str]:
    """The files ``--config-file``/``--config-dir`` in ``argv`` name, in
    the order oslo.config reads them."""
    paths = []
    for flag, value in zip(argv, argv[1:]):
        if flag == "--config-file":
            paths.append(value)
        elif flag == "--config-dir":
            paths += sorted(glob.glob(os.path.join(value, "*.conf")))
    return paths


def _config_dirs(argv: list[str]) -> list[str]:
    """The directories ``--config-dir DIR`` / ``--config-dir=DIR`` in
    ``argv`` name."""
    dirs = []
    for flag, value in zip(argv, argv[1:] + [""]):
        name, sep, inline = flag.partition("=")
        if name == "--config-dir":
            dirs.append(inline if sep else value)
    return dirs


def _check_config_dirs(argv: list[str]) -> None:
    """Each ``--config-dir`` that exists may be listed and entered.

    :raises cfg.Error: naming the first that may not. oslo.config's glob
        finds no file in such a directory, so the command ran on the
        defaults without a word about the files it skipped.
    """
    for path in _config_dirs(argv):
        if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
            raise cfg.Error(
                f"cannot read configuration directory {path} (permission "
                f"denied); run as a user that may read it, e.g. sudo -u "
                f"scheduler")


def sections_setting(path: str, option: str) -> list[str]:
    """The sections of the ini file ``path`` that set ``option``, in file
    order; none if it cannot be read. oslo.config's errors about a value
    name the option without its group: this finds the ``[group]``."""
    sections: list[str] = []
    section = "DEFAULT"
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif (line.partition("=")[0].strip() == option
                      and section not in sections):
                    sections.append(section)
    except (OSError, UnicodeDecodeError):
        pass
    return sections


def _where_set(dest: str, argv: list[str]) -> str:
    """Where the value of option ``dest`` came from, as oslo.config takes
    it: the command line, else the last file that sets it (``[group]
    option in FILE``)."""
    flags = {f"--{dest}", "--" + dest.replace("_", "-")}
    if any(arg.partition("=")[0] in flags for arg in argv):
        return f"--{dest.replace('_', '-')} on the command line"
    where = f"option {dest}"
    for path in _config_paths(argv):
        sections = sections_setting(path, dest)
        if sections:
            where = f"[{sections[-1]}] {dest} in {path}"
    return where


def parse(conf: cfg.ConfigOpts, argv: list[str], **kwargs) -> None:
    """``conf(argv, **kwargs)``; a file that is not UTF-8 text is a
    ConfigFileParseError naming it, as oslo.config names a syntax error,
    instead of a bare UnicodeDecodeError; a directory given as a file is
    a cfg.Error saying so.

    :raises cfg.Error: a ``--config-dir`` this user may not read; a
        bad value of a command-line option, from the
        command line or a file, naming where it was set: oslo.config
        would print its own line and exit 1, which ``scheduler-status``
        would report as a warning and SIGHUP's reload could not catch.
    """
    # oslo.config writes that line to stderr itself; anything else written
    # meanwhile (usage, warnings) is passed on as it was.
    _check_config_dirs(argv)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            conf(argv, **kwargs)
    except SystemExit as e:
        lines = captured.getvalue().splitlines(keepends=True)
        bad = [m for m in map(_BAD_CLI_VALUE.fullmatch,
                              (line.rstrip("\n") for line in lines)) if m]
        if e.code == 1 and bad:
            sys.stderr.write("".join(
                line for line in lines if line.rstrip("\n") != bad[0][0]))
            raise cfg.Error(
                f"{_where_set(bad[0]['dest'], argv)}: invalid "
                f"{bad[0]['type']} value {bad[0]['value']!r}; fix the "
                f"value") from None
        sys.stderr.writelines(lines)
        raise
    except (UnicodeDecodeError, IsADirectoryError) as e:
        sys.stderr.write(captured.getvalue())
        paths = _config_paths(argv)
        for path in paths:
            if os.path.isdir(path):
                # Not a file at all: "not UTF-8 text; fix the file" would
                # send the operator looking inside it.
                raise cfg.Error(
                    f"configuration file {path} is a directory; pass a "
                    f"file to --config-file (or the directory to "
                    f"--config-dir)") from None
            try:
                with open(path, encoding="utf-8") as f:
                    f.read()
            except UnicodeDecodeError as bad_file:
                raise cfg.ConfigFileParseError(
                    path, f"not a UTF-8 text file ({bad_file})") from None
        raise cfg.ConfigFileParseError(", ".join(paths), str(e)) from None
    else:
        sys.stderr.write(captured.getvalue())
