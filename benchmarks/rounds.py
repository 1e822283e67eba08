"""What the round-by-round end-to-end benchmarks (``stacks.py``,
``drains.py``) share: their command line, the broker they need, and their
table of medians and 99th percentiles."""
from __future__ import annotations

import argparse
import statistics
import sys
from typing import Callable

from benchmarks import machine
from benchmarks import servers


def percentile(samples: list[float], q: float) -> float:
    """The sample at quantile ``q`` (nearest rank)."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def main(doc: str, argv: list[str] | None,
         run: Callable[[int, int], dict[str, list[float]]],
         title: Callable[[argparse.Namespace], str], column: str,
         labels: dict[str, str]) -> dict[str, float] | None:
    """Parse ``--hosts`` and ``--rounds``, ``run(hosts, rounds)`` (seconds
    per round, by name), print the machine, ``title(args)`` and one row
    per name of ``labels``: p50 and p99 in ms.
    :returns: the medians by name, or None when no RabbitMQ can run."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    why = servers.unavailable(["rabbitmq"])
    if why:
        print("cannot run: " + "; ".join(why), file=sys.stderr)
        return None
    times = run(args.hosts, args.rounds)
    print(machine.one_line(machine.describe()))
    print(title(args) + "\n")
    print(f"{column:<40}  {'p50 ms':>8}  {'p99 ms':>8}")
    medians = {}
    for name, label in labels.items():
        samples = times[name]
        medians[name] = statistics.median(samples)
        print(f"{label:<40}  {medians[name] * 1000:>8.1f}  "
              f"{percentile(samples, 0.99) * 1000:>8.1f}")
    return medians
