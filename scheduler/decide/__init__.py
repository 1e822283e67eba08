"""Deciding: from a validated request to claimed destinations.

A driver plans on the host table (targeting, filters, weighers, the choice
among the best), assumes the plan in the table, then claims it in SQL and
re-plans when the claim is refused. Where a new driver goes: a ``Driver``
subclass (``base``) implementing ``plan``; claims and retries come with it.

- ``base``: what every driver shares: plan, assume, claim, answer.
- ``filter``, ``chance``, ``caching``: the three drivers.
- ``targeting``: ignore, force and requested destination, before filters.
- ``choice``: which of the best-weighed hosts an instance gets.
- ``attempts``, ``races``: what a refused claim means; lost races counted.
- ``selection``: the host chosen for an instance, and the answer's shape.
- ``rebuild``: nova's rebuild check as a request.
- ``plugins``: drivers, filters and weighers loaded by entry point.
"""
