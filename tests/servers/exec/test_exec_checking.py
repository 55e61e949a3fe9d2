"""The policy check cannot freeze the server: it runs in a worker process on a time budget, and other tools answer
while it runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.checking import CheckWorker, Judge
from hermitcrab.servers.exec.policy import Checker
from hermitcrab.servers.exec.shell import MAX_LENGTH

pytestmark = pytest.mark.anyio
# Checking this takes ~0.6 s on an idle core (each `$(ls)` is a command of its own), three times the budget below.
SLOW_LINE = "echo " + "$(ls) " * ((MAX_LENGTH - 5) // 6) + "abc"  # exactly MAX_LENGTH (20,000), and allowed


async def test_a_line_over_the_budget_is_refused_while_other_tools_answer(workspace: Path, state: Path) -> None:
    server = build_server([workspace], state, Policy(allow=("echo", "ls")), sandbox="none", check_budget_s=0.2)
    finished: list[str] = []
    async with Client(server) as client:
        await client.call_tool("exec", {"command": "echo warm"})  # the worker is up: only the check is timed

        async def check() -> None:
            result = await client.call_tool("exec", {"command": SLOW_LINE})
            finished.append("exec")
            assert result.is_error and "too complex to check within 0.2 s" in result.content[0].text  # type: ignore[union-attr]

        async def listing() -> None:
            await anyio.sleep(0.05)  # the check has started
            await client.call_tool("list_dir", {})
            finished.append("list_dir")

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            group.start_soon(check)
            group.start_soon(listing)
        elapsed = time.monotonic() - started
        after = await client.call_tool("exec", {"command": "echo checked again"})

    assert finished == ["list_dir", "exec"]  # a check on the event loop would have held list_dir until it ended
    assert elapsed < 2, "the issue's bound; the budget is 0.2 s, the rest is a generous margin for a loaded machine"
    assert not after.is_error and "checked again" in after.content[0].text  # type: ignore[union-attr]


async def test_a_check_whose_call_was_cancelled_never_answers_the_next_line(workspace: Path) -> None:
    allow = Policy(allow=("echo", "ls"))
    checker = Checker(allow, [workspace], sandboxed=False, search_path=os.environ["PATH"], home="/nonexistent")
    worker = CheckWorker(Judge(checker, "on-miss", "allowlist"), budget_s=10)
    try:
        await worker.verdict("echo warm", workspace, None, (), [])  # started: the line below is sent at once
        with anyio.move_on_after(0.05):  # the caller gives up while the allowed slow line is being checked
            await worker.verdict(SLOW_LINE, workspace, None, (), [])
        later = await worker.verdict("touch x", workspace, None, (), [])
    finally:
        worker.stop()

    assert len(SLOW_LINE) == MAX_LENGTH and checker.check(SLOW_LINE, workspace).allowed  # a stale answer would pass
    assert not later.allowed and "touch" in later.misses[0].reason
