"""Nova's computes heartbeating into nova's cell databases, as nova's DB
servicegroup driver does (``report_count += 1; service.save()``, which
sets ``last_seen_up`` and ``updated_at``)::

    python -m benchmarks.nova_heartbeat [--interval 10] [--tick 0.1] \\
        CELL_URL [CELL_URL ...]

Every live ``nova-compute`` service of each cell reports once per
``--interval`` seconds, spread evenly over it as computes started at
random moments would be: every ``--tick`` seconds the services due then
report, one UPDATE per cell (1,000 rows a second at 10,000 hosts and
10 s). First, every service reports at once, as computes do when they
start, so that none is down however long ago the last beat was. Node
rows are not touched: nova's compute writes its node only when its usage
changes. Runs until SIGTERM; prints ``heartbeating`` after that first
beat, and at exit how late the ticks ran.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

import sqlalchemy as sa

from scheduler.db import clock

#: The columns of nova's ``services`` a heartbeat writes.
SERVICES = sa.table("services", sa.column("id"), sa.column("binary"),
                    sa.column("deleted"), sa.column("report_count"),
                    sa.column("last_seen_up"), sa.column("updated_at"))
BEAT = (SERVICES.update()
        .where(SERVICES.c.id.in_(sa.bindparam("ids", expanding=True)))
        .values(report_count=SERVICES.c.report_count + 1,
                last_seen_up=clock.utcnow(), updated_at=clock.utcnow()))


def slices(count: int, ticks: int) -> list[slice]:
    """``count`` items cut into ``ticks`` consecutive slices whose sizes
    differ by one at most (some empty when there are fewer items than
    ticks): each item in exactly one."""
    return [slice(count * i // ticks, count * (i + 1) // ticks)
            for i in range(ticks)]


def service_ids(engine: sa.Engine) -> list[int]:
    """The ids of a cell's live compute services."""
    with engine.connect() as conn:
        return list(conn.execute(
            sa.select(SERVICES.c.id)
            .where(SERVICES.c.binary == "nova-compute",
                   SERVICES.c.deleted == 0)
            .order_by(SERVICES.c.id)).scalars())


def beat(engine: sa.Engine, ids: list[int]) -> None:
    """One heartbeat of each service of ``ids``, in one transaction."""
    if ids:
        with engine.begin() as conn:
            conn.execute(BEAT, {"ids": ids})


def run(urls: list[str], interval: float, tick: float,
        stop: threading.Event) -> float:
    """Heartbeat the cells at ``urls`` until ``stop``; the latest any
    tick began after its time, in seconds."""
    engines = [sa.create_engine(url) for url in urls]
    try:
        cells = [(engine, service_ids(engine)) for engine in engines]
        for engine, ids in cells:
            beat(engine, ids)
        print(f"heartbeating {sum(len(i) for _, i in cells)} services in "
              f"{len(cells)} cells every {interval:g} s", flush=True)
        ticks = max(1, round(interval / tick))
        parts = [slices(len(ids), ticks) for _, ids in cells]
        started = time.monotonic()
        late = 0.0
        n = 0
        while True:
            # By the schedule, not the last beat: a slow tick does not
            # make the round longer.
            due = started + (n + 1) * interval / ticks
            if stop.wait(max(0.0, due - time.monotonic())):
                return late
            late = max(late, time.monotonic() - due)
            for (engine, ids), part in zip(cells, parts):
                beat(engine, ids[part[n % ticks]])
            n += 1
    finally:
        for engine in engines:
            engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--tick", type=float, default=0.1)
    parser.add_argument("urls", nargs="+", metavar="CELL_URL")
    args = parser.parse_args(argv)
    if args.interval <= 0 or not 0 < args.tick <= args.interval:
        parser.error("--interval and --tick must be positive, the tick no "
                     "longer than the interval")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    late = run(args.urls, args.interval, args.tick, stop)
    print(f"stopped; the latest tick began {late * 1000:.0f} ms late",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
