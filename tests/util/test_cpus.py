"""The CPUs a process may run on are those of its affinity mask, not the machine's: a container given 2 CPUs of a
64-core host must not size its work for 64."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ON_ONE_CPU = "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_a_process_held_to_one_cpu_counts_one_and_embeds_in_batches_sized_for_it():
    code = ON_ONE_CPU + (
        "from hermitcrab.util.cpus import usable_cpus; from hermitcrab.servers.memory.vectors import MIN_BATCH; "
        "print(usable_cpus(), MIN_BATCH)"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout

    assert shown.split() == ["1", "4"]
