"""hermitcrab-cron as a real process: --help, streamable HTTP, and kill -9 followed by a restart on the same store."""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.servers.cron.conftest import call, events, job, soon
from tests.support.fake_llm import free_port
from tests.support.processes import help_of, pid_serving, serving


def test_help_lists_the_flags():
    shown = help_of("hermitcrab.servers.cron")
    for flag in ("--state", "--grace-s", "--min-interval-s", "--max-jobs", "--http", "--log-level"):
        assert flag in shown


async def test_serves_streamable_http(state: Path):
    port = free_port()
    command = [sys.executable, "-m", "hermitcrab.servers.cron", "--state", str(state), "--http", f"127.0.0.1:{port}"]
    with serving(command, port) as url:
        async with Client(url) as client:
            woken = await call(client, "cron_wake", text="over http")
            assert [item["id"] for item in (await events(client))["items"]] == [woken["event_id"]]
            assert (await call(client, "cron_status"))["role"] == "scheduler"


def server_params(state: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "hermitcrab.servers.cron", "--state", str(state), "--min-interval-s", "0"]
    )


async def test_kill_9_then_restart_runs_no_tick_twice_and_catches_up_once(state: Path):
    with anyio.fail_after(30):
        async with Client(server_params(state)) as client:
            every = await call(client, "cron_add", job=job("every", every=1))
            once = await call(
                client, "cron_add", job=job("once", schedule={"kind": "at", "at": soon(1.6)}, delete_after_run=True)
            )
            while not (fired := len((await events(client))["items"])):  # `every`'s first tick, a second in
                await anyio.sleep(0.05)
            os.kill(pid_serving("hermitcrab.servers.cron", state), signal.SIGKILL)
        await anyio.sleep(2.6)  # `once`, and two ticks of `every`, fall into the downtime

        async with Client(server_params(state)) as client:
            # the catch-ups, then a scheduled tick of `every` after them, then time for a tick run twice to show
            while len((await events(client))["items"]) < fired + 3:
                await anyio.sleep(0.05)
            await anyio.sleep(0.2)
            items = (await events(client))["items"]
            runs = (await call(client, "cron_runs", limit=100))["runs"]
            jobs = (await call(client, "cron_list", include_disabled=True))["jobs"]

    run_ids = Counter((run["job_id"], run["run_id"]) for run in runs)
    assert max(run_ids.values()) == 1, run_ids
    assert len({item["id"] for item in items}) == len(items)
    triggers = Counter((run["job_id"], run["trigger"]) for run in runs)
    assert triggers[(every["id"], "catch-up")] == 1 and triggers[(once["id"], "catch-up")] == 1
    assert [item["job_id"] for item in items].count(once["id"]) == 1
    assert [entry["id"] for entry in jobs] == [every["id"]]  # the one-shot was deleted after it fired
