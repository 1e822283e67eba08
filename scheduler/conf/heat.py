"""Options in [heat]: Heat's database, where the stacks Heat creates are
read from, so that nova's boots of a stack's servers land on the stack's
plan."""
from oslo_config import cfg

GROUP = "heat"

opts = [
    cfg.StrOpt("database_connection", default="", secret=True,
               help="Heat's database (heat's [database] connection), read "
                    "and never written. The first boot whose scheduler "
                    "hints name a Heat root stack this service has not "
                    "placed (Heat's [DEFAULT] stack_scheduler_hints = "
                    "true) makes it read that stack's template, files and "
                    "environment and place the whole stack at once; every "
                    "boot of the stack then gets its server's planned "
                    "host. Give it a read-only database user. Empty (the "
                    "default): only stacks placed beforehand with "
                    "select_stack (scheduler-client stack place "
                    "--stack-id) are used this way."),
    cfg.StrOpt("flavors_file", default="",
               help="The flavors (a YAML file as scheduler-client stack "
                    "reads, e.g. /etc/scheduler/flavors.yaml) that Heat "
                    "templates name their servers' flavors from, when "
                    "[nova] api_database_connection is not set; with it, "
                    "nova's own flavors are read."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
