"""Large freed buffers go back to the operating system.

glibc serves an allocation of at least ``M_MMAP_THRESHOLD`` bytes with a
mapping of its own and unmaps it on free. The threshold starts at 128 KiB,
but each time such a block is freed glibc raises it to that block's size
(up to 32 MiB). After one large message a worker's later large buffers
(message bodies, their decoded text, host-table arrays) therefore come
from the heap, and a heap returns memory only from its top, so anything
small still in use above them pins them. A worker that was sent a 20 MB
body kept 40-60 MB more resident for good (measured: ``malloc_trim`` gave
it all back, so it was free memory, not a leak). A fixed threshold turns
that raising off.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

#: glibc's ``mallopt`` parameter number for the mmap threshold.
_M_MMAP_THRESHOLD = -3
#: glibc's own starting value: blocks this large are mapped and unmapped.
MMAP_THRESHOLD = 128 * 1024


def _operator_chose() -> bool:
    """Whether the environment already sets the threshold (glibc reads it
    at start-up; an operator's choice wins over ours)."""
    return ("MALLOC_MMAP_THRESHOLD_" in os.environ
            or "glibc.malloc.mmap_threshold"
            in os.environ.get("GLIBC_TUNABLES", ""))


def return_large_buffers(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes for this process
    and the processes it forks afterwards.

    Returns whether it was set: False when the C library is not glibc (no
    ``mallopt``) or when the environment already chose a threshold. Never
    raises.
    """
    if _operator_chose():
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return mallopt(_M_MMAP_THRESHOLD, threshold) == 1
