"""The daemon behind ``scheduler-server``: the supervisor in the main
process and its worker processes, the workers' states, health (systemd's
sd_notify, ``/healthcheck``, ``/metrics`` over HTTP), the allocator's
memory, the peers that share the topic, and the checks of the database
and the configuration before anything forks.
"""
