"""The spawn server: how long sessions_spawn takes to answer, 50 `cli` runs through --max-concurrent 8 against the
ideal schedule, and what an `agent` child costs before its first LLM request (process start to request).

Run: .venv/bin/python bench/spawn.py [--spawns 200] [--runs 50] [--agents 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_llm import FakeLLM, fake_llm_env, openai_text, running_fake_llm  # noqa: E402
from tests.support.spawn import FAKE_CLI  # noqa: E402

RUN_S = 0.5


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50_ms={statistics.median(ordered) * 1000:8.2f}  p99_ms={p99 * 1000:8.2f}  n={len(ordered)}"


def server(state: Path, *flags: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    args = ["-m", "hermitcrab.servers.spawn", "--state", str(state), "--max-children", "1000", *flags]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


async def call(client: Client, tool: str, session: str = "main", **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments, meta={"hermitcrab/session": session})
    assert not result.is_error and result.structured_content is not None, result.content
    return result.structured_content


async def pending(client: Client) -> list[dict[str, Any]]:
    contents = (await client.read_resource("spawn://events")).contents
    return json.loads(contents[0].text)["items"]  # type: ignore[union-attr]  # a text resource


async def spawn_latency(state: Path, spawns: int) -> list[float]:
    """Call -> accepted, each run a trivial command (`true`) so the queue keeps moving."""
    samples: list[float] = []
    async with Client(server(state, "--cli", "noop=true")) as client:
        for number in range(spawns):
            start = time.perf_counter()
            await call(client, "sessions_spawn", f"bench-{number}", task="x", runtime="cli", cli="noop")
            samples.append(time.perf_counter() - start)
        with anyio.fail_after(120):
            while len(await pending(client)) < spawns:
                await anyio.sleep(0.05)
    return samples


async def many_runs(state: Path, runs: int) -> tuple[float, int, int]:
    """Wall time for `runs` runs of RUN_S seconds each through 8 slots; (seconds, items announced, of them ok)."""
    slow = f"work={sys.executable} {FAKE_CLI} --sleep {RUN_S} --stdin"
    async with Client(server(state, "--cli", slow, "--max-concurrent", "8")) as client:
        start = time.perf_counter()
        for number in range(runs):
            await call(client, "sessions_spawn", task=f"job {number}", runtime="cli", cli="work")
        with anyio.fail_after(120):
            while len(items := await pending(client)) < runs:
                await anyio.sleep(0.02)
        wall = time.perf_counter() - start
    return wall, len({item["id"] for item in items}), sum(item["status"] == "ok" for item in items)


async def agent_overhead(state: Path, llm: FakeLLM, home: Path, agents: int) -> list[float]:
    """From the run's process start (the server's started_at) to the child's first request at the scripted LLM."""
    env = fake_llm_env(home, llm, api_key="sk-bench")
    agent = f"{sys.executable} -m hermitcrab.host.cli subagent"
    samples: list[float] = []
    async with Client(server(state, "--agent", agent, env=env)) as client:
        for number in range(agents):
            llm.enqueue(openai_text(f"result {number}"))
            seen = len(llm.requests)
            run = await call(client, "sessions_spawn", task=f"task {number}")
            with anyio.fail_after(60):
                while len(llm.requests) == seen:
                    await anyio.sleep(0.002)
            arrived = time.time()
            status = await call(client, "sessions_status", run_id=run["run_id"])
            samples.append(arrived - datetime.fromisoformat(status["started_at"]).timestamp())
            with anyio.fail_after(60):
                while len(await pending(client)) <= number:
                    await anyio.sleep(0.02)
    return samples


async def main(spawns: int, runs: int, agents: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        print(f"sessions_spawn call -> accepted (stdio)       {summary(await spawn_latency(base / 'a', spawns))}")
        wall, announced, ok = await many_runs(base / "b", runs)
        ideal = math.ceil(runs / 8) * RUN_S
        print(
            f"{runs} cli runs of {RUN_S} s, --max-concurrent 8:  wall_s={wall:6.2f}  ideal_s={ideal:5.2f}  "
            f"serial_s={runs * RUN_S:5.1f}  announced={announced}/{runs}  ok={ok}"
        )
        home = base / "home"
        (home / "workspace").mkdir(parents=True)
        with running_fake_llm() as llm:
            bare = await agent_overhead(base / "c", llm, home, agents)
            print(f"agent child, no MCP servers: start -> 1st LLM request  {summary(bare)}")
            cron_args = json.dumps(["-m", "hermitcrab.servers.cron", "--state", str(home / "state" / "cron")])
            cron = f'[mcpServers.cron]\ncommand = "{sys.executable}"\nargs = {cron_args}\n'
            (home / "config.toml").write_text(cron)
            with_cron = await agent_overhead(base / "d", llm, home, agents)
            print(f"agent child, with the cron server: start -> 1st LLM request  {summary(with_cron)}")
    print(f"(cpus: {os.cpu_count()})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spawns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--agents", type=int, default=5)
    options = parser.parse_args()
    anyio.run(main, options.spawns, options.runs, options.agents)
