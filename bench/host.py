"""Host overheads, side by side: a tool call through the pool vs a bare MCP client, a whole turn, and CLI start-up.

Run: .venv/bin/python bench/host.py [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from hermitcrab.host.agent import Agent  # noqa: E402
from hermitcrab.host.config import AgentSettings, ServerConfig, Settings  # noqa: E402
from hermitcrab.host.events import Event, Target  # noqa: E402
from hermitcrab.host.gateway import Gateway  # noqa: E402
from hermitcrab.host.pool import McpPool  # noqa: E402
from hermitcrab.host.session import SessionStore  # noqa: E402
from tests.support.channels import SilentChannel  # noqa: E402
from tests.support.fake_llm import openai_text, running_fake_llm  # noqa: E402
from tests.support.scripted_provider import ScriptedProvider  # noqa: E402

TEST_SERVER = str(ROOT / "tests" / "support" / "mcp_test_server.py")


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50_ms={statistics.median(ordered) * 1000:8.3f}  p99_ms={p99 * 1000:8.3f}"


async def bare_client(calls: int) -> list[float]:
    samples = []
    async with Client(StdioServerParameters(command=sys.executable, args=[TEST_SERVER])) as client:
        for _ in range(calls):
            start = time.perf_counter()
            await client.call_tool("add", {"a": 1, "b": 2})
            samples.append(time.perf_counter() - start)
    return samples


async def through_pool(calls: int) -> list[float]:
    samples = []
    async with McpPool([ServerConfig("kit", command=sys.executable, args=(TEST_SERVER,))]) as pool:
        for _ in range(calls):
            start = time.perf_counter()
            await pool.call("add", {"a": 1, "b": 2})
            samples.append(time.perf_counter() - start)
    return samples


async def whole_turns(turns: int, home: Path) -> list[float]:
    """One user message, one tool call over stdio, one answer: the host's cost around the model."""
    provider = ScriptedProvider()
    for index in range(turns):
        provider.call((f"c{index}", "add", {"a": index, "b": 1})).say("done")
    settings = Settings(home, (), (ServerConfig("kit", command=sys.executable, args=(TEST_SERVER,)),), AgentSettings())
    samples = []
    async with McpPool(settings.servers) as pool:
        gateway = Gateway(
            Agent(settings, provider, pool, SessionStore(home / "sessions")), {"test": SilentChannel()}, ask_timeout_s=1
        )
        for index in range(turns):
            start = time.perf_counter()
            await gateway.process(Event("message", f"turn {index}", Target("test", "b")))
            samples.append(time.perf_counter() - start)
    return samples


def cli_start(runs: int, home: Path, with_server: bool) -> list[float]:
    samples = []
    with running_fake_llm() as llm:
        config = home / "desktop.json"
        servers = {"kit": {"command": sys.executable, "args": [TEST_SERVER]}} if with_server else {}
        config.write_text(json.dumps({"mcpServers": servers}))
        env = {**os.environ, "HERMITCRAB_HOME": str(home), "HERMITCRAB_LLM_BASE_URL": llm.url}
        for _ in range(runs):
            llm.enqueue(openai_text("ok"))
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "hermitcrab.host.cli", "ask", "--mcp-config", str(config), "hi"],
                env=env,
                capture_output=True,
                check=True,
            )
            samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--cli-runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        print("tool call round trip (stdio test server, tool `add`)")
        print(f"  bare mcp.Client.call_tool              {summary(anyio.run(bare_client, args.calls))}")
        print(f"  McpPool.call (routing, timeout guard)  {summary(anyio.run(through_pool, args.calls))}")
        print("whole turn, scripted model: message -> tool call -> answer, transcript on disk")
        print(f"  Gateway.process                        {summary(anyio.run(whole_turns, args.turns, home))}")
        print("hermitcrab ask, cold start to exit (scripted LLM on 127.0.0.1)")
        print(f"  no MCP servers                         {summary(cli_start(args.cli_runs, home, False))}")
        print(f"  one stdio MCP server                   {summary(cli_start(args.cli_runs, home, True))}")


if __name__ == "__main__":
    main()
