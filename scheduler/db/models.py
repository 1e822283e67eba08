"""SQL schema: nova's Liberty-era services/compute_nodes, aggregates, and the
allocations that claims write.

Rows are soft-deleted like nova's (``deleted = id``), which is why the unique
constraints include ``deleted``. The scheduler reads these tables with
SQLAlchemy Core through the ``Table`` objects (``Service.__table__``); the ORM
classes exist for migrations and admin commands.
"""
from __future__ import annotations

import datetime

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import mysql


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    pass


class _Timestamps:
    created_at = sa.Column(sa.DateTime, default=_utcnow, nullable=True)
    updated_at = sa.Column(sa.DateTime, onupdate=_utcnow, nullable=True)


class _SoftDelete:
    deleted_at = sa.Column(sa.DateTime, nullable=True)
    deleted = sa.Column(sa.Integer, default=0, nullable=False)


class Service(Base, _Timestamps, _SoftDelete):
    __tablename__ = "services"
    __table_args__ = (
        sa.UniqueConstraint("host", "binary", "deleted",
                            name="uniq_services0host0binary0deleted"),
        sa.Index("services_last_seen_up_idx", "last_seen_up"),
        sa.Index("services_forced_down_idx", "forced_down"),
        sa.Index("services_change_seq_idx", "change_seq"),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=True, unique=True)
    host = sa.Column(sa.String(255), nullable=True, index=True)
    binary = sa.Column(sa.String(255), nullable=True)
    topic = sa.Column(sa.String(255), nullable=True)
    report_count = sa.Column(sa.Integer, nullable=False, default=0)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)
    disabled_reason = sa.Column(sa.String(255), nullable=True)
    forced_down = sa.Column(sa.Boolean, nullable=False, default=False)
    last_seen_up = sa.Column(sa.DateTime, nullable=True)
    version = sa.Column(sa.Integer, nullable=False, default=0)
    #: Stamped by triggers on admin changes (not heartbeats); see
    #: migration 0003.
    change_seq = sa.Column(sa.BigInteger, nullable=False, default=0)


class ComputeNode(Base, _Timestamps, _SoftDelete):
    __tablename__ = "compute_nodes"
    __table_args__ = (
        sa.UniqueConstraint(
            "host", "hypervisor_hostname", "deleted",
            name="uniq_compute_nodes0host0hypervisor_hostname0deleted"),
        sa.Index("compute_nodes_change_seq_idx", "change_seq"),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=True, unique=True)
    # Nullable and without a foreign key, as in nova: nodes join their
    # service by host name.
    service_id = sa.Column(sa.Integer, nullable=True)
    host = sa.Column(sa.String(255), nullable=True, index=True)
    hypervisor_hostname = sa.Column(sa.String(255), nullable=True)
    hypervisor_type = sa.Column(sa.Text, nullable=False, default="QEMU")
    hypervisor_version = sa.Column(sa.Integer, nullable=False, default=0)
    host_ip = sa.Column(sa.String(39), nullable=True)
    vcpus = sa.Column(sa.Integer, nullable=False)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    local_gb = sa.Column(sa.Integer, nullable=False)
    vcpus_used = sa.Column(sa.Integer, nullable=False, default=0)
    memory_mb_used = sa.Column(sa.Integer, nullable=False, default=0)
    local_gb_used = sa.Column(sa.Integer, nullable=False, default=0)
    free_ram_mb = sa.Column(sa.Integer, nullable=True)
    free_disk_gb = sa.Column(sa.Integer, nullable=True)
    disk_available_least = sa.Column(sa.Integer, nullable=True)
    running_vms = sa.Column(sa.Integer, nullable=True, default=0)
    current_workload = sa.Column(sa.Integer, nullable=True, default=0)
    cpu_info = sa.Column(sa.Text, nullable=False, default="{}")
    supported_instances = sa.Column(sa.Text, nullable=True)
    metrics = sa.Column(sa.Text, nullable=True)
    stats = sa.Column(sa.Text, nullable=True, default="{}")
    cpu_allocation_ratio = sa.Column(sa.Float, nullable=True)
    ram_allocation_ratio = sa.Column(sa.Float, nullable=True)
    disk_allocation_ratio = sa.Column(sa.Float, nullable=True)
    # Bumped by every writer of this row (claims and compute agents); a
    # claim's UPDATE is conditional on the generation it planned with.
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    #: Stamped by triggers on every write; see migration 0003.
    change_seq = sa.Column(sa.BigInteger, nullable=False, default=0)


class Aggregate(Base, _Timestamps, _SoftDelete):
    __tablename__ = "aggregates"
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=True, unique=True)
    name = sa.Column(sa.String(255), nullable=False)


class AggregateHost(Base, _Timestamps, _SoftDelete):
    __tablename__ = "aggregate_hosts"
    __table_args__ = (
        sa.UniqueConstraint("host", "aggregate_id", "deleted",
                            name="uniq_aggregate_hosts0host0aggregate_id0deleted"),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    host = sa.Column(sa.String(255), nullable=False)
    aggregate_id = sa.Column(sa.Integer, sa.ForeignKey("aggregates.id"),
                             nullable=False)


class AggregateMetadata(Base, _Timestamps, _SoftDelete):
    __tablename__ = "aggregate_metadata"
    __table_args__ = (
        sa.UniqueConstraint("aggregate_id", "key", "deleted",
                            name="uniq_aggregate_metadata0aggregate_id0key0deleted"),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    aggregate_id = sa.Column(sa.Integer, sa.ForeignKey("aggregates.id"),
                             nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class Allocation(Base):
    """One claim: the resources one consumer (instance) holds on one node."""
    __tablename__ = "allocations"
    __table_args__ = (
        sa.Index("allocations_expires_at_idx", "expires_at"),
        sa.Index("allocations_source_node_id_idx", "source_node_id"),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    consumer_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    compute_node_id = sa.Column(sa.Integer, nullable=False, index=True)
    project_id = sa.Column(sa.String(255), nullable=True)
    user_id = sa.Column(sa.String(255), nullable=True)
    group_uuid = sa.Column(sa.String(36), nullable=True, index=True)
    vcpus = sa.Column(sa.Integer, nullable=False)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    disk_gb = sa.Column(sa.Integer, nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=False,
                           server_default=sa.func.now())
    # Set while the claim is provisional: it is released at this time (by
    # the database's clock) unless the caller confirms it first.
    expires_at = sa.Column(sa.DateTime, nullable=True)
    # Set while the consumer is being moved (migration 0005): the claim on
    # the node it is leaving, kept until confirm_move gives it back or
    # revert_move makes it the claim again. The columns above then hold the
    # destination.
    source_node_id = sa.Column(sa.Integer, nullable=True)
    source_vcpus = sa.Column(sa.Integer, nullable=True)
    source_memory_mb = sa.Column(sa.Integer, nullable=True)
    source_disk_gb = sa.Column(sa.Integer, nullable=True)
    # Set with a move that has no confirm step (migration 0009: nova's live
    # migration, evacuation): the instance reported on the destination
    # confirms the move, which gives the source back.
    confirm_on_arrival = sa.Column(sa.Boolean, nullable=False,
                                   server_default=sa.false())
    # Set on a claim whose move (one waiting for its confirm) expired and
    # was reverted (migration 0010): the destination it gave back, counted
    # nowhere. The instance reported there after all (a resize whose disk
    # copy outlived the TTL) gets that move back (claims.moves.relocate).
    expired_node_id = sa.Column(sa.Integer, nullable=True)
    expired_vcpus = sa.Column(sa.Integer, nullable=True)
    expired_memory_mb = sa.Column(sa.Integer, nullable=True)
    expired_disk_gb = sa.Column(sa.Integer, nullable=True)
    # With nova's databases as the host source (migration 0012): the node
    # whose compute's report was seen to include this claim, and whether
    # the report of a move's source is its source's. Only what a report
    # does not include counts on top of it (claims.usage.held, sources).
    reported_node_id = sa.Column(sa.Integer, nullable=True)
    source_reported = sa.Column(sa.Boolean, nullable=False,
                                server_default=sa.false())


class ClaimGroup(Base):
    """One row per server group with hard claims: a group's claims update
    it first, which serializes them (a row lock on PostgreSQL/MySQL), so
    two concurrent boots cannot both see the group empty."""
    __tablename__ = "claim_groups"
    uuid = sa.Column(sa.String(36), primary_key=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    # The group's hard policy and per-host limit, as its last claim said
    # (migration 0011): what a drain moves its members by.
    policy = sa.Column(sa.String(32), nullable=True)
    max_per_host = sa.Column(sa.Integer, nullable=True)


class Stack(Base):
    """One row per stack placed with ``select_stack``: its definition as
    validated (canonical JSON, consumer uuids included), so a re-send can be
    told from a changed stack and ``release_stack`` knows its consumers."""
    __tablename__ = "stacks"
    stack_id = sa.Column(sa.String(36), primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=True)
    user_id = sa.Column(sa.String(255), nullable=True)
    # MySQL's TEXT stops at 64 KiB; a stack of many resources can exceed it.
    definition = sa.Column(
        sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"), nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=False,
                           server_default=sa.func.now())


class StackInstance(Base):
    """A consumer of a stack whose claim nova's instance took over (a boot
    of the stack's server for Heat; migration 0013)."""
    __tablename__ = "stack_instances"
    consumer_uuid = sa.Column(sa.String(36), primary_key=True)
    stack_id = sa.Column(sa.String(36), nullable=False, index=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)


class Drain(Base):
    """One row per host being drained (``plan_drain`` with ``apply``): the
    plan it applied, as the JSON of its moves, so the same drain applied
    again returns it."""
    __tablename__ = "drains"
    host = sa.Column(sa.String(255), primary_key=True)
    same_aggregate = sa.Column(sa.Boolean, nullable=False)
    definition = sa.Column(
        sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"), nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=False,
                           server_default=sa.func.now())


class DrainMove(Base):
    """One planned move of a drain; ``begun`` once the move's own
    scheduler request was answered (``cancel_drain`` leaves those)."""
    __tablename__ = "drain_moves"
    consumer_uuid = sa.Column(sa.String(36), primary_key=True)
    host = sa.Column(sa.String(255), nullable=False, index=True)
    begun = sa.Column(sa.Boolean, nullable=False, server_default=sa.false())


class ChangeCounter(Base):
    """One row (id 1) of counters that triggers bump on every tracked
    write; a refresh compares them with what it saw last."""
    __tablename__ = "change_counter"
    id = sa.Column(sa.Integer, primary_key=True)
    nodes = sa.Column(sa.BigInteger, nullable=False, default=0)
    node_deletes = sa.Column(sa.BigInteger, nullable=False, default=0)
    services = sa.Column(sa.BigInteger, nullable=False, default=0)
    aggregates = sa.Column(sa.BigInteger, nullable=False, default=0)


services = Service.__table__
compute_nodes = ComputeNode.__table__
aggregates = Aggregate.__table__
aggregate_hosts = AggregateHost.__table__
aggregate_metadata = AggregateMetadata.__table__
allocations = Allocation.__table__
claim_groups = ClaimGroup.__table__
stacks = Stack.__table__
stack_instances = StackInstance.__table__
drains = Drain.__table__
drain_moves = DrainMove.__table__
change_counter = ChangeCounter.__table__
