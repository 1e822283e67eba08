"""The console scripts, the edge of the pipeline: each parses its own
flags with argparse, hands ``--config-file``/``--config-dir`` to
oslo.config, calls into the layers below and prints the result (or one
``ERROR:`` line, :mod:`scheduler.errors`).

- ``server``: ``scheduler-server``, the daemon (:mod:`scheduler.service`);
- ``manage``: ``scheduler-manage``, the database and operator actions
  (:mod:`scheduler.admin`);
- ``status``: ``scheduler-status upgrade check``;
- ``client`` (with ``client_parser``, ``client_request``,
  ``client_output``): ``scheduler-client``, requests over the RPC API;
- ``fleet``: ``scheduler-fleet``, a simulated fleet (:mod:`scheduler.sim`);
- ``parsing``, ``logs``, ``table``: what the scripts share.
"""
