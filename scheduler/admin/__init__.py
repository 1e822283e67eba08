"""Operator actions on services, hosts, nodes and aggregates (behind
``scheduler-manage``), and the upgrade checks (behind ``scheduler-status``).

Every action takes the engine and plain values (no configuration), runs in
one transaction, and reports what an operator got wrong as
:class:`~scheduler.exception.NotFound` (an unknown host or aggregate) or
:class:`~scheduler.exception.InvalidRequest` (a request that cannot be
done as asked); the message is meant to be shown as it is.

- ``services``: list services, disable or enable a compute service;
- ``compute_hosts``: compute hosts and their nodes, one host in detail;
- ``aggregates``: create, fill, describe and delete host aggregates;
- ``validation``: what the names and values written must be;
- ``audit``: claims against the nodes' usage, and the fix;
- ``upgrade_checks``: what ``scheduler-status upgrade check`` checks.
"""
