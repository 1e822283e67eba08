"""The claim step: what makes a plan real, atomically, in SQL.

A decision plans on host states read a moment ago and ends in one
:class:`~scheduler.hosts.planned.Claim` per instance. The claim writes
them all or none, each node only at the generation the plan read and
within the limit the planner enforced; a refusal sends the decision back
to plan again. After that, the claims live on in the ``allocations``
table until released, confirmed, moved or expired.

- ``batch``: group commit — the claims of requests that queue up in one
  process share one transaction.
- ``consume``: the claim itself — each node's guarded UPDATE, then the
  allocation rows.
- ``groups``: server groups with a hard policy, kept inside the claim.
- ``refusals``: why a claim is refused beyond a stale plan, and what the
  database held when it was.
- ``lifecycle``: provisional claims, confirmed, renewed, released, expired.
- ``moves``: a claim holding a destination and its source until the move
  ends (confirm, revert, relocate).
- ``usage``, ``rewrite``: what they share — the one UPDATE of a node's
  usage, and how a claim's row is deleted and written again.

Where claims are is read below, in ``scheduler.db.allocations``, so the
planning cycle can ask without importing this step.

Every writer here writes first: on SQLite a transaction that starts with
a write waits for the write lock (busy timeout) instead of failing when a
read snapshot turns out to be stale.
"""
