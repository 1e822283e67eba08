"""Options in [nova]: serving nova's own conductor (RPC 4.x), and nova's
own databases as the host source.

Nova's scheduler API is always served beside ours, on the same topic; nova
reaches it when ``[DEFAULT] control_exchange`` is ``nova`` (nova's own
setting) and ``[scheduler] topic`` is ``scheduler``.
"""
from oslo_config import cfg

GROUP = "nova"

opts = [
    cfg.StrOpt("cell_uuid", default=None,
               help="UUID of the nova cell whose compute hosts this "
                    "service places on (nova-manage cell_v2 list_cells). "
                    "Every Selection sent to nova carries it, and nova's "
                    "conductor compares it with the instance's cell: a "
                    "different one makes a move cross-cell. Required for "
                    "nova's select_destinations; calls fail with "
                    "NoValidHost naming this option while it is unset. "
                    "Nova's conductor and computes reach this service only "
                    "when [DEFAULT] control_exchange is the exchange nova "
                    "uses (nova: 'nova') and [scheduler] topic is "
                    "'scheduler' (nova's, fixed). With "
                    "api_database_connection set, each Selection carries "
                    "its host's own cell instead and this is not used."),
    cfg.StrOpt("api_database_connection", default="", secret=True,
               help="Nova's API database (nova's [api_database] "
                    "connection), read and never written: the compute "
                    "nodes, services and instances of every enabled cell "
                    "it maps (not cell0), its aggregates and host mappings "
                    "are the hosts this service places on, as they are "
                    "nova-scheduler's. Give it a read-only database user. "
                    "Empty (the default): hosts come from this service's "
                    "own services and compute_nodes tables."),
    cfg.StrOpt("cell_database_username", default="",
               help="With api_database_connection: the database user this "
                    "service reads each cell's database as, in place of "
                    "the one in the cell's database_connection (nova's "
                    "own, which may write). Empty: the cell's own."),
    cfg.StrOpt("cell_database_password", default="", secret=True,
               help="The password of cell_database_username."),
    cfg.FloatOpt("sync_interval", default=1.0, min=0.1,
                 help="Seconds between reads of what changed in nova's "
                      "databases (nodes' reports, services, instances this "
                      "service placed, aggregates), with "
                      "api_database_connection set. A claim counts on top "
                      "of its node's report until a read shows the report "
                      "includes it."),
    cfg.IntOpt("cell_refresh_interval", default=60, min=1,
               help="Seconds between reads of nova's cell mappings: a cell "
                    "created, disabled or enabled is seen within this time "
                    "(and at once on SIGHUP)."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
