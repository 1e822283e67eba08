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
"""
from __future__ import annotations

import ctypes
import ctypes.util
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
    """Whether the environment already sets either threshold (glibc reads
    it at start-up; an operator's choice wins over ours)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return any(name in os.environ or name in tunables
               for name in _OPERATOR_SETTINGS)


def tune_allocator(mmap_threshold: int = MMAP_THRESHOLD,
                   trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Fix glibc's mmap and trim thresholds for this process and the
    processes it forks afterwards.

    Returns whether they were set: False when the C library is not glibc
    (no ``mallopt``) or when the environment already chose a threshold.
    Never raises.
    """
    if _operator_chose():
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return (mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1
            and mallopt(_M_TRIM_THRESHOLD, trim_threshold) == 1)
