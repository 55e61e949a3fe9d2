"""How many CPUs this process may run on, for sizing its batches and thread pools."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the OS keeps one (a container given 2 CPUs of a
    64-core host sees 2 there, where `os.cpu_count()` says 64), else the machine's count. A cgroup CPU quota
    (`docker --cpus`) changes neither, so a caller sizing work by it should cap what it derives."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
