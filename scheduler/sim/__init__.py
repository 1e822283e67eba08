"""A simulated fleet of compute nodes (``scheduler-fleet``), for demos,
tests and benchmarks. Nothing in the service imports it."""
