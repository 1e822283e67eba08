"""scheduler-server: the daemon's console script. It loads the
configuration, sets up its logging, and hands over to the supervisor
(:func:`scheduler.service.supervisor.serve`), which runs until SIGTERM.
"""
from __future__ import annotations

import io
import logging as pylogging
import sys

from amqp.abstract_channel import IGNORED_METHOD_DURING_CHANNEL_CLOSE
from amqp.spec import Basic

from scheduler.cmd import logs
from scheduler.cmd import parsing
from scheduler import conf as sched_conf
from scheduler import errors
from scheduler.service import sd_notify
from scheduler.service import supervisor

#: A standard library logger: :func:`logs.to_files` makes its record.
LOG = pylogging.getLogger(__name__)


def _escape_unencodable_in_logs() -> None:
    """Every log handler's stream writes what its encoding cannot hold
    (a lone surrogate, which JSON carries as ``"\\ud800"`` and a refusal
    may echo) as a backslash escape: with the default strict errors the
    line was lost and a "--- Logging error ---" traceback written
    instead."""
    for handler in pylogging.getLogger().handlers:
        if isinstance(handler, pylogging.FileHandler):
            handler.errors = "backslashreplace"     # for a reopened file
        stream = getattr(handler, "stream", None)
        if isinstance(stream, io.TextIOWrapper) and not stream.closed:
            stream.reconfigure(errors="backslashreplace")


class _CancelOfOwnFanoutQueue(pylogging.Filter):
    """Drops py-amqp's "Received method (60, 30) during closing channel"
    WARNING, written at every stop: oslo.messaging deletes a worker's
    fanout queue as it closes its connection, its consumer still on it,
    and RabbitMQ tells that consumer with a basic.cancel (60, 30) that
    reaches the channel closing. Any other method stays a WARNING."""

    def filter(self, record: pylogging.LogRecord) -> bool:
        return not (record.msg == IGNORED_METHOD_DURING_CHANNEL_CLOSE
                    and record.args and record.args[0] == Basic.Cancel)


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGTERM: 0, or 1 after one ``ERROR:`` line
    (:mod:`scheduler.errors`) when it cannot start or a worker fails for a
    reason a restart cannot fix."""
    argv = sys.argv[1:] if argv is None else argv
    loaded: list = []
    # First of all: systemd's socket is ours alone (see sd_notify).
    notifier = sd_notify.from_environment()

    def body() -> int:
        version = parsing.version()
        conf = sched_conf.load(argv, description="Scheduler RPC server",
                               version=parsing.version_line(
                                   "scheduler-server"))
        loaded.append(conf)
        supervisor.register_opts(conf)
        logs.setup_log_output(conf, "scheduler")
        _escape_unencodable_in_logs()
        pylogging.getLogger("amqp").addFilter(_CancelOfOwnFanoutQueue())
        try:
            return supervisor.serve(conf, argv, notifier, version)
        except Exception as e:
            failure = e
        # The log file has the reason too (stderr gets errors.run's line):
        # under systemd with log_file set, it had none.
        why = errors.describe(failure, conf)
        logs.to_files(LOG, pylogging.ERROR,
                      f"scheduler-server exits: {why or repr(failure)}",
                      exc_info=failure if why is None else None)
        raise failure

    return errors.run(body, conf=lambda: loaded[0] if loaded else None)


if __name__ == "__main__":
    sys.exit(main())
