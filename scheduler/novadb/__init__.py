"""Nova's own databases as the host source (``[nova]
api_database_connection``): read, never written.

Nova's computes write their state into nova's cell databases. This folder
reads it there and keeps this service's own ``services`` /
``compute_nodes`` / aggregate tables a mirror of it, so that everything
above (the host table, filters, claims, moves, stacks, drains) works on
nova's hosts unchanged, and claims stay atomic in our own database.

- ``schema``: the columns of nova's tables we read, and the check that a
  database is nova's at nova 34's schema.
- ``cells``: the enabled cells of the API database, and how one is
  reached.
- ``databases``: the API database's engine and each enabled cell's,
  checked to be nova's.
- ``reading``: the reads of one cell and of the API database.
- ``included``: the one owner of "does a node's report include a claim".
- ``mirror``: the writes into our own tables: a node's usage is its report
  plus our claims the report does not include yet.
- ``source``: the sync loop that ties them, its liveness and cell answers;
  ``cycle``: what one of its cycles reads and makes.
- ``probe``: whether nova's databases answer, for ``/healthcheck``.
"""
