"""Draining a host and what-if (architecture.rst "Draining a host, and
what-if").

``residents``: what is on a host, and the move each instance gets;
``drain``: every move planned against the others, all or nothing, and
applied in one transaction (``claims.drains``); ``capacity``: how many more
instances like a spec fit, optionally as if some hosts were drained.
"""
