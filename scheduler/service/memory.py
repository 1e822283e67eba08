"""glibc's allocator, set for a worker's two kinds of large buffers.

Message bodies are rare and may be huge (a 20 MB body is a malformed or
hostile message); host-table arrays are made and freed several times per
request, each as large as the fleet (800 KB at 100,000 hosts).

glibc serves an allocation of at least ``M_MMAP_THRESHOLD`` bytes with a
mapping of its own and unmaps it on free; smaller ones come from a heap,
whose free top it gives back once it exceeds ``M_TRIM_THRESHOLD``. By
default both start at 128 KiB and glibc raises the mmap threshold each
time a mapped block is freed (up to 32 MiB). After one large message a
worker's later large buffers therefore came from the heap, which returns
memory only from its top, so anything small still in use above them
pinned them: a worker sent a 20 MB body kept 40-60 MB more resident for
good. Fixing the threshold at 128 KiB cured that, but then every array of
a 100,000-host table was mapped, faulted in page by page and unmapped:
5.6 ms of system CPU per request (measured), twice the scheduling itself.

So: a fixed mmap threshold of :data:`MMAP_THRESHOLD` (bodies that large go
back to the system as soon as they are freed; a table's arrays, up to
500,000 hosts, stay in the heap), and a trim threshold of
:data:`TRIM_THRESHOLD`, so that the heap's free top is kept for the next
request's arrays instead of being given back and faulted in again.

That trim threshold also kept a large message's pieces: the broker
client reads a body in frames of 128 KiB, each below the mmap threshold,
into the heap of the thread reading it, and glibc gives each thread an
arena of its own, whose free top nothing gives back below the trim
threshold. A worker went from 100 to 131 MB after one refused 30 MB
stack, for good. :func:`release_free_memory`, which a worker calls with
its periodic tasks (once a minute), gives the free pages of every arena
back; the next request faults its arrays in once. (Making all threads
share one arena, ``M_ARENA_MAX`` 1, was tried and dropped: workers forked
after it hung at start in clean CI runs, for a reason not found.)
"""
from __future__ import annotations

import ctypes
import os

#: glibc's ``mallopt`` parameter numbers.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks this large are mapped and unmapped (message bodies).
MMAP_THRESHOLD = 4 * 1024 * 1024
#: A heap keeps this much free at its top (a few requests' arrays).
TRIM_THRESHOLD = 32 * 1024 * 1024

#: Environment variables by which an operator sets them for glibc.
_OPERATOR_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                      "glibc.malloc.mmap_threshold",
                      "glibc.malloc.trim_threshold")


def _operator_chose() -> bool:
    """Whether the environment already sets one of the thresholds (glibc
    reads it at start-up; an operator's choice wins over ours)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return any(name in os.environ or name in tunables
               for name in _OPERATOR_SETTINGS)


def _libc() -> ctypes.CDLL | None:
    # The process's own symbols, libc's among them: find_library would
    # run a subprocess (ldconfig) and disturb the heap it is about to tune.
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def tune_allocator(mmap_threshold: int = MMAP_THRESHOLD,
                   trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Fix glibc's mmap and trim thresholds for this process and the
    processes it forks afterwards.

    Returns whether the thresholds were set: False when the C library is
    not glibc (no ``mallopt``) or when the environment already chose a
    threshold. Never raises.
    """
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    if _operator_chose():
        return False
    return (mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1
            and mallopt(_M_TRIM_THRESHOLD, trim_threshold) == 1)


def release_free_memory() -> bool:
    """Give the allocator's free memory back to the system (glibc's
    ``malloc_trim(0)``: the main arena's free top, and the free pages
    inside every arena), whatever the trim threshold.

    Returns whether any was given back: False also when the C library is
    not glibc (no ``malloc_trim``). Never raises.
    """
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes = (ctypes.c_size_t,)
    return trim(0) == 1
