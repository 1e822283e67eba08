"""scheduler-status: ``upgrade check``, the OpenStack convention
(oslo.upgradecheck) for "is this deployment ready to run this code?".

Exit status: 0 every check passed, 1 a warning, 2 a failure (the table says
which and the fix), 255 the checks could not run (one ``ERROR:`` line, e.g.
a missing configuration file, or a bug's traceback). ``--json`` after
``check`` prints the results as JSON.
"""
from __future__ import annotations

import sys

from oslo_config import cfg
from oslo_log import log as logging
from oslo_upgradecheck import upgradecheck

from scheduler.cmd import logs
from scheduler.cmd import parsing
from scheduler import conf as sched_conf
from scheduler import errors
from scheduler import exception
from scheduler.admin import upgrade_checks

#: oslo.upgradecheck's code for "the check itself failed to run".
ERROR = 255

_opts = [
    cfg.FloatOpt("broker-timeout", min=0.1,
                 help="Seconds the broker check may take (default: "
                      "[scheduler] broker_startup_timeout)."),
]


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the checks and return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    conf = sched_conf.new_conf()
    logging.register_options(conf)
    conf.register_cli_opts(_opts)
    checks = upgrade_checks.Checks(conf, lambda: conf.broker_timeout)
    upgradecheck.register_cli_options(conf, checks)
    try:
        sched_conf.parse(conf, argv, project="scheduler",
                         default_config_files=[],
                         version=parsing.version_line("scheduler-status"),
                         description="Is this deployment ready for this "
                                     "code?")
        logs.setup_logging(conf, False, "scheduler-status")
    except (cfg.Error, exception.ConfigError) as e:
        errors.error(errors.describe(e) or str(e))
        return ERROR
    # oslo.upgradecheck takes ``check`` as a positional of any value: a
    # typo ("upgrade chek") would run the checks as if it were right.
    if conf.command.check != "check":
        errors.error(f"unknown command 'upgrade {conf.command.check}'; "
                     f"expected 'upgrade check'")
        return ERROR
    # oslo.upgradecheck reads --json from its module-level CONF.
    upgradecheck.CONF = conf
    return upgradecheck.run(conf)


if __name__ == "__main__":
    sys.exit(main())
