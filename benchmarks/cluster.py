"""A synthetic fleet in a database, built once per size and database, and
the writes a compute agent makes to it.

Uses only the scheduler's stable entry points: ``scheduler.conf.load``,
``scheduler.db.engine.create_engine``, ``scheduler.db.migration.upgrade`` and
``scheduler.sim.fleet`` (``make_nodes``, ``register`` — which batches — and
``heartbeat``). Everything else is plain SQL on the nova schema.
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
import random
import time

import sqlalchemy as sa

from scheduler import conf as sched_conf
from scheduler.sim import fleet
from scheduler.db.engine import create_engine
from scheduler.db import migration
from tests.fixtures.config import write_config

#: The fleet is the same in every run and every database.
SEED = 0
#: Nodes per fleet.register call (one transaction each), as agents coming
#: up in waves would. One transaction of 100,000 nodes takes PostgreSQL
#: about 10 minutes with the change-tracking triggers of migration 0003
#: (every row updates the one change_counter row, whose versions pile up
#: within the transaction); waves of this size keep it linear.
REGISTER_WAVE = 2000


@dataclasses.dataclass
class Cluster:
    """One fleet of ``hosts`` nodes in one database."""
    hosts: int
    kind: str                  # "sqlite", "postgresql" or "mysql"
    url: str
    path: Path                 # state directory, config files
    config_file: Path          # for in-process stages
    conf: object
    engine: sa.Engine
    build_seconds: float = 0.0
    #: --set options, for every config written for this fleet
    extra: dict[str, str] = dataclasses.field(default_factory=dict)

    def dispose(self) -> None:
        self.engine.dispose()


def option_setting(value: str) -> tuple[str, str]:
    """argparse type of ``--set GROUP.OPTION=VALUE``: a scheduler option
    for every config a benchmark writes; (``GROUP.OPTION``, ``VALUE``)."""
    key, sep, setting = value.partition("=")
    if not sep or "." not in key.strip(". "):
        raise argparse.ArgumentTypeError(
            f"--set: expected GROUP.OPTION=VALUE, got {value!r}")
    return key.strip(), setting.strip()


def in_process_options(path: Path, url: str) -> dict[str, object]:
    """Options of the in-process stages. ``service_down_time`` is a day:
    those stages run without heartbeats (so that "nothing changed" means
    nothing changed), and the hosts must stay up meanwhile."""
    return {"state_path": path, "database.connection": url,
            "scheduler.service_down_time": 86400}


def build(hosts: int, kind: str, url: str, path: Path,
          extra: dict[str, str] | None = None,
          register: bool = True) -> Cluster:
    """Create the schema in the (empty) database at ``url`` and register
    ``hosts`` nodes, all heartbeating once. ``extra`` options ('group.name'
    -> value) go into every config written for this fleet. Without
    ``register``, the schema alone: for ``hosts`` nodes that come from
    elsewhere (nova's databases, mirrored by the server itself)."""
    extra = dict(extra or {})
    path.mkdir(parents=True, exist_ok=True)
    config_file = write_config(
        path, {**in_process_options(path, url), **extra}, "in-process.conf")
    conf = sched_conf.load(["--config-file", str(config_file)])
    engine = create_engine(conf)
    started = time.monotonic()
    migration.upgrade(engine)
    if not register:
        return Cluster(hosts, kind, url, path, config_file, conf, engine,
                       time.monotonic() - started, extra)
    nodes = fleet.make_nodes(hosts, SEED)
    for start in range(0, len(nodes), REGISTER_WAVE):
        fleet.register(engine, nodes[start:start + REGISTER_WAVE])
    fleet.heartbeat(engine, [n.host for n in nodes])
    if kind == "postgresql":
        # What autovacuum does within a minute of a bulk load: without
        # statistics the planner reads all of compute_nodes for a refresh's
        # "change_seq > N" instead of its index (1.3 ms of PostgreSQL CPU
        # per request at 10,000 hosts). MariaDB's InnoDB and SQLite plan
        # that range from the index itself.
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql("ANALYZE")
    return Cluster(hosts, kind, url, path, config_file, conf, engine,
                   time.monotonic() - started, extra)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}/scheduler.sqlite"


def node_ids(engine: sa.Engine) -> list[int]:
    with engine.connect() as conn:
        return list(conn.execute(sa.text(
            "SELECT id FROM compute_nodes WHERE deleted = 0 ORDER BY id"
        )).scalars())


def _db_now(dialect: str) -> str:
    # The database's clock in UTC, as the scheduler writes it.
    if dialect == "postgresql":
        return "(now() AT TIME ZONE 'utc')"
    if dialect == "mysql":
        return "UTC_TIMESTAMP()"
    return "CURRENT_TIMESTAMP"


class NodeChanger:
    """What compute agents do between two refreshes: a ``fraction`` of the
    nodes report new usage, each bumping ``generation`` and
    ``updated_at``. Calls alternate: an even call adds one small
    instance's worth of usage to a fresh random sample, the odd call after
    it takes it back from the same nodes, so a long run does not drift."""

    def __init__(self, engine: sa.Engine, fraction: float, seed: int = 1):
        self.engine = engine
        self.ids = node_ids(engine)
        self.count = max(1, round(len(self.ids) * fraction))
        self.rng = random.Random(seed)
        self._last: list[int] = []
        # {sign}/{neg}: "+"/"-" to add usage, "-"/"+" to take it back.
        self._sql = (
            "UPDATE compute_nodes SET "
            "vcpus_used = vcpus_used {sign} 1, "
            "memory_mb_used = memory_mb_used {sign} 512, "
            "free_ram_mb = free_ram_mb {neg} 512, "
            "local_gb_used = local_gb_used {sign} 1, "
            "free_disk_gb = free_disk_gb {neg} 1, "
            "running_vms = running_vms {sign} 1, "
            "generation = generation + 1, "
            "updated_at = " + _db_now(engine.dialect.name) + " "
            "WHERE id IN :ids")

    def __call__(self, i: int) -> None:
        if i % 2 == 0 or not self._last:
            self._last = self.rng.sample(self.ids, self.count)
            sign, neg = "+", "-"
        else:
            sign, neg = "-", "+"
        stmt = sa.text(self._sql.format(sign=sign, neg=neg)).bindparams(
            sa.bindparam("ids", expanding=True))
        with self.engine.begin() as conn:
            conn.execute(stmt, {"ids": self._last})
