"""The database: the bottom of the pipeline, below everything that decides.

- ``engine``: ``[database] connection`` made an engine, with each
  database's session settings.
- ``clock``: the database's clock, which decides liveness and deadlines.
- ``compute``: compute nodes, services, aggregates and change counters,
  as plain rows (``hosts`` builds host states from them).
- ``models``: the tables; ``migration``: their schema's revisions.
- ``compiled``: statements compiled (and prepared) once.
- ``retry``: outages and lost races retried; ``response``: how long one
  round trip may wait; ``wrapped``: oslo.db's warning in one line;
  ``kept``: one connection kept across calls.
"""
