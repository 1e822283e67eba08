"""HostState: one compute node as the scheduler sees it.

A HostState is an immutable snapshot of a ``compute_nodes`` row joined to its
service and aggregates. Requests never mutate a shared HostState: planning an
instance onto a host produces a new one (:func:`HostState.consumed`), so
concurrent requests in one process cannot see each other's half-made plans.
The database claim is what makes a plan real.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from scheduler.hosts import capacity

Key = tuple[str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class Aggregate:
    id: int
    name: str
    metadata: dict[str, str]
    uuid: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class HostState:
    node_id: int
    uuid: str | None
    host: str
    nodename: str
    generation: int
    vcpus_total: int
    vcpus_used: int
    memory_mb_total: int
    memory_mb_used: int
    disk_gb_total: int
    disk_gb_used: int
    cpu_allocation_ratio: float
    ram_allocation_ratio: float
    disk_allocation_ratio: float
    # Liveness and admin state of the node's service (ComputeFilter's input).
    service_up: bool
    service_disabled: bool
    disabled_reason: str | None = None
    aggregates: tuple[Aggregate, ...] = ()
    num_instances: int = 0
    num_io_ops: int = 0
    host_ip: str | None = None
    hypervisor_type: str | None = None
    hypervisor_version: int = 0
    stats: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Parsed once per refresh from the node's JSON columns (bad JSON reads
    # as empty). Treat them as read-only, like the rest of the snapshot.
    #: ``(arch, hypervisor_type, vm_mode)`` triples the node can run,
    #: lower-cased; an element may be None.
    supported_instances: tuple[tuple[str | None, str | None, str | None],
                               ...] = ()
    #: metric name -> value (nova's monitor metrics, e.g. ``cpu.percent``),
    #: as nova's scheduler reads them: CPU percentages in percent.
    metrics: dict[str, float] = dataclasses.field(default_factory=dict)
    #: the node's ``cpu_info`` JSON object.
    cpu_info: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: recent failed builds (the ``failed_builds`` stat; reset on success).
    failed_builds: int = 0

    @property
    def key(self) -> Key:
        return (self.host, self.nodename)

    @property
    def usable(self) -> bool:
        """Up and enabled: what ComputeFilter requires."""
        return self.service_up and not self.service_disabled

    @property
    def vcpus_limit(self) -> float:
        return capacity.limit(self.vcpus_total, self.cpu_allocation_ratio)

    @property
    def memory_mb_limit(self) -> float:
        return capacity.limit(self.memory_mb_total,
                              self.ram_allocation_ratio)

    @property
    def disk_gb_limit(self) -> float:
        return capacity.limit(self.disk_gb_total, self.disk_allocation_ratio)

    @property
    def free_vcpus(self) -> float:
        """vCPUs left under the allocation ratio (what nova's CPUWeigher
        weighs)."""
        return self.vcpus_limit - self.vcpus_used

    # free_ram_mb and free_disk_gb mean what nova's HostState / ComputeNode
    # fields of those names mean: *physical* room, total minus used, no
    # allocation ratio (nova's RAMWeigher and DiskWeigher weigh them, and
    # JsonFilter queries and ``capabilities:`` extra specs written for nova
    # name them). Room under the ratio is ``*_limit - *_used``.
    @property
    def free_ram_mb(self) -> float:
        return self.memory_mb_total - self.memory_mb_used

    @property
    def free_disk_gb(self) -> float:
        return self.disk_gb_total - self.disk_gb_used

    def availability_zones(self) -> set[str]:
        return {agg.metadata["availability_zone"] for agg in self.aggregates
                if "availability_zone" in agg.metadata}

    def consumed(self, vcpus: int, memory_mb: int, disk_gb: int,
                 generation: int | None = None) -> HostState:
        """This host after one more instance of the given size is planned;
        at ``generation`` if one is given (a claim's write), else at its
        own."""
        return dataclasses.replace(
            self,
            vcpus_used=self.vcpus_used + vcpus,
            memory_mb_used=self.memory_mb_used + memory_mb,
            disk_gb_used=self.disk_gb_used + disk_gb,
            num_instances=self.num_instances + 1,
            num_io_ops=self.num_io_ops + 1,
            generation=self.generation if generation is None
            else generation)

    def released(self, vcpus: int, memory_mb: int,
                 disk_gb: int) -> HostState:
        """This host after a claim of the given size is given back. The
        I/O count is the host's own report, not the claim's: it stays."""
        return dataclasses.replace(
            self,
            vcpus_used=self.vcpus_used - vcpus,
            memory_mb_used=self.memory_mb_used - memory_mb,
            disk_gb_used=self.disk_gb_used - disk_gb,
            num_instances=self.num_instances - 1)
