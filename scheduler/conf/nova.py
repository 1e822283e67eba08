"""Options in [nova]: serving nova's own conductor (RPC 4.x).

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
                    "'scheduler' (nova's, fixed)."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
