"""Options in [DEFAULT]."""
import socket

from oslo_config import cfg

opts = [
    cfg.StrOpt("host", default=socket.gethostname(),
               sample_default="<hostname>",
               help="Name of this scheduler server. It is the name the "
                    "server listens on besides the shared topic, and the "
                    "name reported by ping."),
    cfg.StrOpt("state_path", default="/var/lib/scheduler",
               help="Directory for the service's state. Unless [database] "
                    "connection is set, the database is the SQLite file "
                    "$state_path/scheduler.sqlite."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts)


def list_opts() -> dict:
    return {"DEFAULT": opts}
