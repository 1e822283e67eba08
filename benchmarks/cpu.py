"""CPU time a server spent, read from ``/proc``: what a request costs the
process that serves it, as opposed to how long the caller waited.

A server the benchmark starts runs in a session of its own
(:class:`benchmarks.servers.Process`), so its process group is the server:
``scheduler-server``'s parent and its forked workers, or the echo server's
one process. Their user + system time (all threads) is summed; a row's
CPU per request is the difference over the row divided by the calls made.
"""
from __future__ import annotations

import os

#: clock ticks per second, the unit of utime/stime in /proc/<pid>/stat
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def available() -> bool:
    return os.path.exists("/proc/self/stat")


def group_seconds(pgid: int) -> float:
    """User + system CPU seconds of every live process in process group
    ``pgid`` (threads included; children already reaped are not)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:            # gone meanwhile
            continue
        # The command name (field 2) may hold spaces: split after its ')'.
        fields = stat[stat.rindex(b")") + 2:].split()
        # fields[0] is field 3 (state): pgrp is field 5, utime 14, stime 15.
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / _TICKS


class Meter:
    """CPU seconds of some process groups together (several servers)
    between :meth:`start` and :meth:`stop`; ``None`` where /proc is
    missing."""

    def __init__(self, pgids: list[int]):
        self.pgids = list(pgids) if available() else None
        self._start = 0.0

    def _seconds(self) -> float:
        return sum(group_seconds(pgid) for pgid in self.pgids)

    def start(self) -> None:
        if self.pgids is not None:
            self._start = self._seconds()

    def stop(self) -> float | None:
        if self.pgids is None:
            return None
        return self._seconds() - self._start
