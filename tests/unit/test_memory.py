"""scheduler.memory: after one large buffer, later large buffers still go
back to the operating system once freed.

Each case runs in a fresh interpreter: the threshold is process-wide and
must not change under the rest of the suite.
"""
from __future__ import annotations

import os
import subprocess
import sys

#: Free a 20 MB buffer (which raises glibc's threshold unless pinned), then
#: take 40 MB in 1 MB bodies with a small survivor after each (too big for
#: Python's own small-object allocator, so it lands in the heap between
#: them), drop the bodies and print how much stayed resident.
PROGRAM = """
import re, sys
from scheduler import memory

def rss_kb():
    status = open("/proc/self/status").read()
    return int(re.search(r"VmRSS:\\s+(\\d+) kB", status).group(1))

print(memory.return_large_buffers() if sys.argv[1] == "pin" else "-")
body = bytes(20_000_000)
del body
base = rss_kb()
survivors, bodies = [], []
for _ in range(40):
    bodies.append(b"x" * 1_000_000)
    survivors.append(bytearray(2000))
del bodies
print(rss_kb() - base)
"""


def run(mode: str, **env: str) -> tuple[str, int]:
    """(what return_large_buffers said, kB still resident after freeing)."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")}
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], env=environ,
                         check=True, capture_output=True, text=True).stdout
    said, retained = out.split()
    return said, int(retained)


def test_freed_large_buffers_are_returned_once_pinned():
    said, retained = run("pin")
    assert said == "True"
    assert retained < 5_000, retained


def test_without_it_the_heap_keeps_them():
    # The control: what the pin prevents does happen on this libc.
    _, retained = run("unpinned")
    assert retained > 30_000, retained


def test_an_operators_own_threshold_wins():
    said, retained = run("pin", MALLOC_MMAP_THRESHOLD_="33554432")
    assert said == "False"
    # Their 32 MiB threshold keeps the 1 MB bodies in the heap, as they
    # asked.
    assert retained > 30_000, retained
