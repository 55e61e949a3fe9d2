"""Handing freed heap pages back to the OS: glibc keeps what native code (tantivy's 32 MB writer arena, a dropped
embedding model) freed in its arenas, so an idle server would keep the high-water mark of its busiest moment."""

from __future__ import annotations

import ctypes
import gc
from contextlib import suppress


def trim(collect: bool = False) -> None:
    """Return free heap pages to the OS (after a garbage collection when `collect`); a no-op without glibc."""
    if collect:
        gc.collect()
    with suppress(OSError, AttributeError):  # not glibc: the pages are reused by this process instead
        ctypes.CDLL("libc.so.6").malloc_trim(0)
