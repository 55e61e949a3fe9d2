"""hermitcrab-spawn as a real stdio process: --help, kill -9 leaves no process of any run, a restart announces the
runs it cut off as interrupted."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.support.processes import help_of

from .conftest import FAKE_CLI, call, spawn, wait_for_items


def test_help_lists_the_flags():
    shown = help_of("hermitcrab.servers.spawn")
    for flag in ("--state", "--cli", "--agent", "--max-concurrent", "--max-children", "--max-depth", "--http"):
        assert flag in shown


def server_params(state: Path) -> StdioServerParameters:
    slow = f"slow={sys.executable} {FAKE_CLI} --grandchild --sleep 60"
    return StdioServerParameters(
        command=sys.executable, args=["-m", "hermitcrab.servers.spawn", "--state", str(state), "--cli", slow]
    )


def processes_of(marker: str) -> dict[int, int]:
    """pid -> process group of every live process whose command line holds `marker`."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                found[int(entry)] = os.getpgid(int(entry)) if marker.encode() in cmdline else -1
            except OSError:
                continue
    return {pid: group for pid, group in found.items() if group != -1}


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_kill_9_of_the_server_leaves_no_process_of_its_runs_and_a_restart_announces_them(state: Path):
    with anyio.fail_after(40):
        async with Client(server_params(state)) as client:
            first = await spawn(client, "slow", "first task")
            second = await spawn(client, "slow", "second task")
            while len(groups := set(processes_of(FAKE_CLI).values())) < 2:
                await anyio.sleep(0.05)
            while not any(b"sleep\x00300" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _all_pids()):
                await anyio.sleep(0.05)
            server_pid = next(iter(processes_of(f"--state\x00{state}")))
            os.kill(server_pid, signal.SIGKILL)
        while any(group_alive(group) for group in groups):
            await anyio.sleep(0.05)

        async with Client(server_params(state)) as client:
            items = await wait_for_items(client, 2)
            status = await call(client, "sessions_status", run_id=first)

    assert {item["id"] for item in items} == {first, second}
    assert all("finished: interrupted] the spawn server stopped" in item["text"] for item in items)
    assert status["status"] == "interrupted"


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
