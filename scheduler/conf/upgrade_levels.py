"""Options in [upgrade_levels]: RPC version caps for rolling upgrades."""
from oslo_config import cfg

GROUP = "upgrade_levels"

opts = [
    cfg.StrOpt("scheduler", regex=r"^\d+\.\d+$",
               help="Highest RPC API version clients send to the scheduler, "
                    "e.g. '1.0' while older servers are still running. "
                    "Unset means the newest this client knows."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
