"""scheduler.service.memory: after one large buffer, later large message bodies
still go back to the operating system once freed, and table-sized arrays
made and freed request after request stay in the heap.

Each case runs in a fresh interpreter: the thresholds are process-wide and
must not change under the rest of the suite.
"""
from __future__ import annotations

import os
import subprocess
import sys

#: Free a 20 MB buffer (which raises glibc's threshold unless fixed), then
#: take 40 MB in 5 MB bodies with a small survivor after each (too big for
#: Python's own small-object allocator, so it lands in the heap between
#: them), drop the bodies and print how much stayed resident.
BODIES = """
import re, sys
from scheduler.service import memory

def rss_kb():
    status = open("/proc/self/status").read()
    return int(re.search(r"VmRSS:\\s+(\\d+) kB", status).group(1))

print(memory.tune_allocator() if sys.argv[1] == "tune" else "-")
body = bytes(20_000_000)
del body
base = rss_kb()
survivors, bodies = [], []
for _ in range(8):
    bodies.append(b"x" * 5_000_000)
    survivors.append(bytearray(2000))
del bodies
print(rss_kb() - base)
"""

#: What a request does with a 100,000-host table: arrays of 800 KB made
#: and freed, a few at a time. Print the page faults of 100 such requests
#: after a warm-up.
ARRAYS = """
import resource, sys
from scheduler.service import memory

print(memory.tune_allocator() if sys.argv[1] == "tune" else
      memory.tune_allocator(mmap_threshold=128 * 1024,
                            trim_threshold=128 * 1024))

def request():
    a = bytearray(800_000)
    b = bytearray(800_000)
    c = bytearray(800_000)
    del a, b, c

for _ in range(10):
    request()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    request()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


#: A message read from the broker in 128 KiB frames (each below the mmap
#: threshold, so from the heap) and joined into one body: the frames' 30 MB
#: stay free in the heap, under the trim threshold, until given back.
FRAMES = """
import re, sys
from scheduler.service import memory

def rss_kb():
    status = open("/proc/self/status").read()
    return int(re.search(r"VmRSS:\\s+(\\d+) kB", status).group(1))

memory.tune_allocator()
base = rss_kb()
frames = [bytes(131_000) for _ in range(240)]
body = b"".join(frames)
del frames, body
kept = rss_kb() - base
print(memory.release_free_memory(), kept, rss_kb() - base)
"""


def run(program: str, mode: str, **env: str) -> tuple[str, int]:
    """(what tune_allocator said, the number the program printed)."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", program, mode], env=environ,
                         check=True, capture_output=True, text=True).stdout
    said, number = out.split()
    return said, int(number)


def test_freed_large_bodies_are_returned():
    said, retained = run(BODIES, "tune")
    assert said == "True"
    assert retained < 5_000, retained


def test_without_it_the_heap_keeps_them():
    # The control: what the fixed threshold prevents does happen on this
    # libc.
    _, retained = run(BODIES, "default")
    assert retained > 30_000, retained


def test_table_sized_arrays_are_reused_without_faulting_pages_in():
    said, faults = run(ARRAYS, "tune")
    assert said == "True"
    assert faults < 100, faults


def test_mapped_table_sized_arrays_fault_every_page_in_each_time():
    # The control: with the old 128 KiB thresholds every array is mapped
    # anew, 196 pages of 4 KiB each.
    _, faults = run(ARRAYS, "small")
    assert faults > 100 * 3 * 100, faults


def test_an_operators_own_threshold_wins():
    said, retained = run(BODIES, "tune", MALLOC_MMAP_THRESHOLD_="33554432")
    assert said == "False"
    # Their 32 MiB threshold keeps the 5 MB bodies in the heap, as they
    # asked.
    assert retained > 30_000, retained
    said, _ = run(BODIES, "tune", MALLOC_TRIM_THRESHOLD_="1048576")
    assert said == "False"


def test_a_large_messages_frames_are_given_back_when_released():
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", FRAMES], env=environ,
                         check=True, capture_output=True, text=True).stdout
    said, kept, after = out.split()
    # The control: the tuned thresholds alone keep them (a worker stayed
    # 30 MB larger after one 30 MB message).
    assert int(kept) > 10_000, kept
    assert said == "True"
    assert int(after) < 5_000, after
