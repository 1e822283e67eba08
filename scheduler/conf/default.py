"""Options in [DEFAULT]."""
import socket

from oslo_config import cfg

opts = [
    cfg.StrOpt("host", default=socket.gethostname(),
               sample_default="<hostname>", regex=r"\S",
               help="Name of this scheduler server. It is the name the "
                    "server listens on besides the shared topic, and the "
                    "name reported by ping."),
    cfg.StrOpt("state_path", default="/var/lib/scheduler",
               help="Directory for the service's state. Unless [database] "
                    "connection is set, the database is the SQLite file "
                    "$state_path/scheduler.sqlite."),
    cfg.IntOpt("report_interval", default=10, min=1,
               help="Seconds between this server's heartbeats in the "
                    "services table (binary scheduler-server). The servers "
                    "up on one topic (a heartbeat within [scheduler] "
                    "service_down_time) divide the best hosts among them, "
                    "so they do not race each other for the same nodes; "
                    "keep it well below service_down_time."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts)


def list_opts() -> dict:
    return {"DEFAULT": opts}
