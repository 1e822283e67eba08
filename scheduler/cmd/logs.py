"""oslo.log for the console scripts: where their lines go, at which
level, and the options that would keep it from writing one (a log file
that cannot be opened, a format string that cannot be filled), refused
as one line naming the option.
"""
from __future__ import annotations

import logging as pylogging

from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as logging

from scheduler import exception
from scheduler.db import wrapped


def setup_logging(conf: cfg.ConfigOpts, debug: bool, name: str) -> None:
    """oslo.log for a command: to stderr (stdout is the command's output)
    unless the configuration says otherwise; DEBUG with ``--debug``, else
    WARNING and up, without oslo.db's "exception wrapped" record."""
    conf.set_default("use_stderr", True)
    if debug:
        conf.set_override("debug", True)
    setup_log_output(conf, name)
    if not debug:
        pylogging.getLogger().setLevel(pylogging.WARNING)
        # The command's own line names that error; --debug shows it all.
        wrapped.install(drop=True)


def to_files(logger: pylogging.Logger, level: int, message: str,
             exc_info: BaseException | None = None) -> None:
    """Log ``message`` to the root logger's file handlers alone (``[DEFAULT]
    log_file``/``log_dir``): for a line stderr has already had (a
    command's ``ERROR:`` line), which a stream or journal handler would
    repeat there. ``exc_info`` adds that exception's traceback.

    Call it outside an ``except`` clause: oslo.log appends the exception
    in flight to a line logged inside one.
    """
    record = logger.makeRecord(
        logger.name, level, "(unknown file)", 0, message, None,
        (type(exc_info), exc_info, exc_info.__traceback__)
        if exc_info is not None else None)
    for handler in pylogging.getLogger().handlers:
        if isinstance(handler, pylogging.FileHandler) \
                and level >= handler.level:
            handler.handle(record)


def setup_log_output(conf: cfg.ConfigOpts, name: str) -> None:
    """``logging.setup(conf, name)`` (oslo.log), which opens the log file.

    :raises ConfigError: the file ``[DEFAULT] log_file``/``log_dir`` make
        cannot be opened (no such directory, permission denied),
        ``log_config_append`` cannot be loaded, ``default_log_levels``
        names an unknown level or ``use_journal`` has no systemd
        bindings; naming the option, not a bare OSError or ValueError.
    """
    try:
        logging.setup(conf, name)
        _check_log_formats(conf)
    except OSError as e:
        where = "[DEFAULT] " + ("log_file" if conf.log_file else "log_dir")
        raise exception.ConfigError(
            f"cannot open log file {e.filename} ({where}): {e.strerror}; "
            f"fix {where}, create its directory or run as a user that may "
            f"write there") from None
    except logging.LogConfigError as e:
        raise exception.ConfigError(
            f"[DEFAULT] log_config_append: {e}; fix the option or the "
            f"file") from None
    except ValueError as e:
        # logging's setLevel of a default_log_levels entry: "Unknown
        # level: 'LOUD'" ('' for an entry without '=LEVEL').
        if not str(e).startswith("Unknown level: "):
            raise
        raise exception.ConfigError(
            f"{_log_option(conf, 'default_log_levels')}: unknown log level "
            f"{str(e).partition(': ')[2]}; write each entry as "
            f"logger=LEVEL (DEBUG, INFO, WARNING, ERROR or CRITICAL)"
        ) from None
    except RuntimeError as e:
        if not (conf.use_journal and "Systemd" in str(e)):
            raise
        raise exception.ConfigError(
            f"{_log_option(conf, 'use_journal')}: the systemd Python "
            f"bindings are not installed ({e}); install them (python3-"
            f"systemd) or set use_journal = false") from None


def _check_log_formats(conf: cfg.ConfigOpts) -> None:
    """oslo.log's format strings can write a line, with a request and
    without: a key the record lacks (``%(nosuch)s``) or a malformed one
    made every log line a "--- Logging error ---" traceback instead.

    :raises ConfigError: naming the option, its file and the error.
    """
    formatter = next((h.formatter for h in pylogging.getLogger().handlers
                      if isinstance(h.formatter,
                                    formatters.ContextFormatter)), None)
    if formatter is None:
        return
    for option, extra in (("logging_default_format_string", {}),
                          ("logging_context_format_string",
                           {"request_id": "req-check"})):
        record = pylogging.LogRecord("scheduler", pylogging.INFO, __file__,
                                     0, "check", None, None)
        record.__dict__.update(extra)
        try:
            formatter.format(record)
        except (KeyError, ValueError, TypeError) as e:
            raise exception.ConfigError(
                f"{_log_option(conf, option)}: cannot write a log line "
                f"with it ({type(e).__name__}: {e}); fix the format "
                f"string") from None


def _log_option(conf: cfg.ConfigOpts, option: str) -> str:
    """``[DEFAULT] option``, and the file that sets it if one does."""
    location = conf.get_location(option)
    return f"[DEFAULT] {option}" + (
        f" in {location.detail}" if location and location.detail else "")
