"""Which way to keep one consistent table per decision (issue #12): a
per-process scheduling-cycle lock over refresh + plan + assume with updates
in place, or copy-on-write tables swapped in by reference?

Both need the planning itself serialized to keep "a process never races
its own threads" (the second request must plan on the first one's assumed
usage), so what differs is the price of an update: in place it costs the
hosts that changed; copy-on-write costs a copy of every column per refresh
that changed anything, and per assume (every decision). This measures those
next to the decision itself, in memory (no SQL), and what planning threads
gain from running unlocked on 2 cores under the GIL::

    python -m benchmarks.snapshot [--hosts 1000,10000,100000] [--repeat 30]

Nothing is asserted; medians in milliseconds (and decisions/s) are printed.
"""
from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

import scheduler.conf
from scheduler.decide.filter import FilterScheduler
from scheduler.hosts.state import Aggregate
from scheduler.hosts.state import HostState
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import LIMITS
from scheduler.hosts.table import NUMERIC
from scheduler.request.spec import RequestSpec

FLAVOR = {"name": "m1.small", "memory_mb": 2048, "vcpus": 1, "root_gb": 20}
ZONES = tuple(Aggregate(i, f"az{i}", {"availability_zone": f"az{i}"})
              for i in range(3))


def make_states(n: int, seed: int = 0) -> list[HostState]:
    rng = random.Random(seed)
    return [HostState(
        node_id=i, uuid=None, host=f"compute-{i:06d}",
        nodename=f"compute-{i:06d}", generation=0,
        vcpus_total=rng.choice([8, 16, 32, 64]), vcpus_used=rng.randint(0, 8),
        memory_mb_total=rng.choice([16384, 65536, 131072]),
        memory_mb_used=rng.randint(0, 8192), disk_gb_total=1000,
        disk_gb_used=rng.randint(0, 200), cpu_allocation_ratio=4.0,
        ram_allocation_ratio=1.5, disk_allocation_ratio=1.0,
        service_up=True, service_disabled=False,
        aggregates=(ZONES[i % 3],)) for i in range(n)]


def cow_update(table: HostTable, changed: dict[int, HostState]
               ) -> HostTable:
    """What a copy-on-write refresh (or assume) would do: a new table with
    every per-host column copied and ``changed`` written into the copy;
    names, positions and zones shared (unchanged hosts, no zone change)."""
    new = object.__new__(HostTable)
    new.__dict__.update(table.__dict__)
    new.states = list(table.states)
    for name in NUMERIC + tuple(LIMITS) + ("service_up", "service_disabled"):
        setattr(new, name, getattr(table, name).copy())
    for i, state in changed.items():
        new.set(i, state)
    return new


def in_place_update(table: HostTable, changed: dict[int, HostState]
                    ) -> HostTable:
    """What the scheduling-cycle design does (under its lock)."""
    for i, state in changed.items():
        table.set(i, state)
    return table


def median_ms(call, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def decisions_per_second(driver, spec, table, threads: int, each: int,
                         lock: threading.Lock | None) -> float:
    def work():
        for _ in range(each):
            if lock is None:
                driver.plan(spec, table)
            else:
                with lock:
                    driver.plan(spec, table)
    workers = [threading.Thread(target=work) for _ in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return threads * each / (time.perf_counter() - started)


def run(hosts: list[int], repeat: int) -> list[dict]:
    conf = scheduler.conf.new_conf()
    conf([], default_config_files=[])
    driver = FilterScheduler(conf, None, None)
    spec = RequestSpec.from_primitives({"flavor": FLAVOR,
                                        "availability_zone": "az1"})
    rows = []
    for n in hosts:
        states = make_states(n)
        table = HostTable(states)
        one = {7: states[7].consumed(1, 2048, 20)}
        rng = random.Random(1)
        percent = {i: states[i].consumed(1, 512, 1)
                   for i in rng.sample(range(n), max(1, n // 100))}
        row = {"hosts": n,
               "plan": median_ms(lambda: driver.plan(spec, table), repeat),
               "in_place_1": median_ms(
                   lambda: in_place_update(table, one), repeat),
               "cow_1": median_ms(lambda: cow_update(table, one), repeat),
               "in_place_1pct": median_ms(
                   lambda: in_place_update(table, percent), repeat),
               "cow_1pct": median_ms(
                   lambda: cow_update(table, percent), repeat)}
        each = max(3, repeat // 4)
        row["dps_1_thread"] = decisions_per_second(
            driver, spec, table, 1, each * 4, None)
        row["dps_4_unlocked"] = decisions_per_second(
            driver, spec, table, 4, each, None)
        row["dps_4_locked"] = decisions_per_second(
            driver, spec, table, 4, each, threading.Lock())
        rows.append(row)
        print_row(row)
    return rows


HEADER = ("hosts", "plan ms", "assume in place", "assume COW",
          "refresh 1% in place", "refresh 1% COW", "dec/s 1 thr",
          "dec/s 4 thr unlocked", "dec/s 4 thr locked")


def print_row(row: dict) -> None:
    values = (row["hosts"], row["plan"], row["in_place_1"], row["cow_1"],
              row["in_place_1pct"], row["cow_1pct"], row["dps_1_thread"],
              row["dps_4_unlocked"], row["dps_4_locked"])
    print(" | ".join(f"{v:.3f}" if isinstance(v, float) else str(v)
                     for v in values), flush=True)


def _sizes(text: str) -> list[int]:
    return [int(float(s.lower().replace("k", "e3"))) for s in
            text.split(",")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=_sizes,
                        default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    print(" | ".join(HEADER))
    run(args.hosts, args.repeat)


if __name__ == "__main__":
    main()
