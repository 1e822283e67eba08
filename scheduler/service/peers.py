"""The scheduler servers on one topic find each other in ``services``.

Each server keeps a ``services`` row alive, as nova-scheduler does: binary
``scheduler-server``, ``host`` its ``[DEFAULT] host``, ``topic`` the RPC
topic it consumes. The live rows on a topic, in host order, say where a
server stands among its peers; :mod:`scheduler.decide.choice` turns that into the
part of the best hosts the server prefers, so servers that share a topic
stop racing each other for the same nodes. Nothing depends on the answer
being right: a claim stays atomic, and a wrong or stale place only costs
lost races again.

Compute services are read with ``binary = nova-compute`` everywhere, so
these rows never look like hosts; ``scheduler-manage service list`` shows
them, up or down by the same rule (:mod:`scheduler.hosts.liveness`).
"""
from __future__ import annotations

import uuid as uuidlib

from oslo_config import cfg
from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.hosts import liveness
from scheduler.db import clock
from scheduler.db import models

SCHEDULER_BINARY = "scheduler-server"


def report(engine: sa.Engine, host: str, topic: str) -> None:
    """Heartbeat ``host``'s row on ``topic``, creating it the first time.

    Every worker of a server reports; they share the one row (unique on
    host and binary), so a server stays up while any of its workers lives.
    :raises sqlalchemy.exc.SQLAlchemyError: the database could not be
        written.
    """
    services = models.services
    with engine.begin() as conn:
        updated = conn.execute(
            services.update()
            .where(services.c.host == host,
                   services.c.binary == SCHEDULER_BINARY,
                   services.c.deleted == 0)
            .values(topic=topic, report_count=services.c.report_count + 1,
                    last_seen_up=clock.utcnow(),
                    updated_at=clock.utcnow()))
        if updated.rowcount:
            return
    try:
        with engine.begin() as conn:
            conn.execute(services.insert().values(
                uuid=str(uuidlib.uuid4()), host=host, binary=SCHEDULER_BINARY,
                topic=topic, report_count=1, disabled=False,
                forced_down=False, last_seen_up=clock.utcnow(),
                created_at=clock.utcnow(), deleted=0, version=0))
    except db_exc.DBDuplicateEntry:
        # A sibling worker created it between our UPDATE and INSERT; its
        # heartbeat is as fresh as ours would have been. (oslo.db's engine
        # raises this for the unique key, never SQLAlchemy's own error.)
        pass


def place(engine: sa.Engine, host: str, topic: str,
          down_time: float) -> tuple[int, int]:
    """``(index, count)``: where ``host`` stands among the servers up on
    ``topic`` (by :func:`scheduler.hosts.liveness.is_up` against ``down_time``),
    in host order; ``(0, 1)`` when it is not up there itself (not yet
    reported, or forced down): it then behaves as if alone.
    :raises sqlalchemy.exc.SQLAlchemyError: the database could not be read.
    """
    services = models.services
    with engine.connect() as conn:
        now = clock.db_time(conn)
        rows = conn.execute(sa.select(
            services.c.host, services.c.forced_down,
            services.c.last_seen_up, services.c.updated_at,
            services.c.created_at).where(
            services.c.binary == SCHEDULER_BINARY,
            services.c.topic == topic, services.c.deleted == 0)).all()
    up = sorted(row.host for row in rows if liveness.is_up(
        row.forced_down, liveness.heartbeat_age(row, now), down_time))
    if host not in up:
        return 0, 1
    return up.index(host), len(up)


def heartbeat(conf: cfg.ConfigOpts, engine: sa.Engine) -> tuple[int, int]:
    """:func:`report` this server (``[DEFAULT] host``) on its ``[scheduler]
    topic``, then :func:`place` it among the servers up there (by
    ``[scheduler] service_down_time``): what a worker does every
    ``report_interval`` seconds, handing the place to its endpoint.
    :raises sqlalchemy.exc.SQLAlchemyError: the database is away.
    """
    topic, host = conf.scheduler.topic, conf.host
    report(engine, host, topic)
    return place(engine, host, topic, conf.scheduler.service_down_time)
