"""What the scheduler knows about hosts, read from SQL and kept fresh.

- ``state``: one compute node as an immutable ``HostState``.
- ``table``: every host state, and their numbers as NumPy columns.
- ``rows``: database rows into host states and their aggregates.
- ``manager``: the refresh from SQL and the scheduling cycle (plan and
  assume one decision at a time per process).
- ``in_flight``: this process's claims assumed and not over yet.
- ``planned``: what a plan hands the claim step (``Claim``) and the
  refusal that sends it back (``ClaimConflict``).
- ``capacity``: the one owner of "how much of a node may be handed out".
- ``aggregates``: aggregate metadata as a number.
- ``liveness``: the one owner of "is the service up".
"""
