"""Host overheads, side by side: a tool call through the pool vs a bare MCP client, a whole turn, and CLI start-up;
and the resource budget: idle RSS of each process of the whole stack (`hermitcrab run` with all five servers), its
growth over a long run of turns, and the memory server's indexing speed.

Run: .venv/bin/python bench/host.py [--calls 300] [--budget-turns 10000] [--only overheads|budget|cold]
(`cold`: only `ask` with the five default servers, to the first model request, to the reply and to exit; the first
run has no tool lists from an earlier run to start lazily with, the later ones do: `docs/architecture.md`, the pool's
readiness)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings  # noqa: E402
from hermitcrab.host.events import Event, Target  # noqa: E402
from hermitcrab.host.gateway.gateway import Gateway  # noqa: E402
from hermitcrab.host.mcp.pool import McpPool  # noqa: E402
from hermitcrab.host.session.transcript import SessionStore  # noqa: E402
from hermitcrab.host.turn.agent import Agent  # noqa: E402
from hermitcrab.servers.memory.embed import make_embedder  # noqa: E402
from hermitcrab.servers.memory.server import build_server as memory_server  # noqa: E402
from tests.support.channels import RecordingChannel  # noqa: E402
from tests.support.fake_llm import (  # noqa: E402
    FakeLLM,
    fake_llm_env,
    free_port,
    openai_text,
    openai_tool_calls,
    running_fake_llm,
)
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
            Agent(settings, provider, pool, SessionStore(home / "sessions")),
            {"test": RecordingChannel()},
            ask_timeout_s=1,
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


def cold_ask(runs: int, home: Path) -> tuple[list[float], list[float], list[float]]:
    """`ask "hi"` with the five default servers: seconds from launch until the model is first asked, until the reply
    is on stdout, and to exit.

    All runs share one home, so the first one waits for every server and the rest start lazily from its tool lists."""
    config = stack_config(home / "cold")
    to_model: list[float] = []
    to_reply: list[float] = []
    to_exit: list[float] = []
    with running_fake_llm() as llm:
        env = {**os.environ, "HERMITCRAB_HOME": str(home / "cold"), "HERMITCRAB_LLM_BASE_URL": llm.url}
        for _ in range(runs):
            llm.enqueue(openai_text("ok"))
            asked = len(llm.requests)
            start = time.perf_counter()
            command = [sys.executable, "-m", "hermitcrab.host.cli", "ask", "--mcp-config", str(config), "hi"]
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            while len(llm.requests) == asked and process.poll() is None:
                time.sleep(0.005)
            to_model.append(time.perf_counter() - start)
            assert process.stdout is not None
            process.stdout.readline()
            to_reply.append(time.perf_counter() - start)
            process.wait()
            to_exit.append(time.perf_counter() - start)
    return to_model, to_reply, to_exit


SERVERS = ("memory", "exec", "browser", "cron", "spawn")
TOKEN = "bench-token"


def stack_config(home: Path) -> Path:
    """Claude Desktop JSON for all five of our servers, each on its own state under `home`."""
    workspace, state = home / "workspace", home / "state"
    workspace.mkdir(parents=True)
    args = {
        "memory": ["--workspace", str(workspace), "--state", str(state / "memory")],
        "exec": ["--root", str(workspace), "--state", str(state / "exec")],
        "browser": ["--state", str(state / "browser")],
        "cron": ["--state", str(state / "cron")],
        "spawn": ["--state", str(state / "spawn")],
    }
    servers = {
        name: {"command": sys.executable, "args": ["-m", f"hermitcrab.servers.{name}", *args[name]]} for name in SERVERS
    }
    path = home / "desktop.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stack_rss(host: int) -> dict[str, float]:
    """RSS of the host and of each server it started, by name."""
    sizes = {"host": rss_mb(host)}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                command = (entry / "cmdline").read_text().replace("\0", " ")
            except OSError:
                continue
            name = next((n for n in SERVERS if f"hermitcrab.servers.{n}" in command), None)
            if ppid == host and name is not None:
                sizes[name] = rss_mb(int(entry.name))
    return sizes


def show(label: str, sizes: dict[str, float]) -> None:
    parts = "  ".join(f"{name} {size:6.1f}" for name, size in sizes.items())
    print(f"  {label:28} {parts}  total {sum(sizes.values()):6.1f} MB")


def script_turns(llm: FakeLLM, turns: int) -> None:
    """Every tenth turn appends to memory, every tenth searches it, the rest only answer; spare replies at the end
    for the memory flush and compaction's summaries."""
    for turn in range(turns):
        if turn % 10 == 0:
            llm.enqueue(openai_tool_calls((f"a{turn}", "memory_append", json.dumps({"text": f"- note {turn}"}))))
        elif turn % 10 == 5:
            llm.enqueue(openai_tool_calls((f"s{turn}", "memory_search", json.dumps({"query": f"note {turn - 5}"}))))
        llm.enqueue(openai_text(f"ok {turn}"))
    llm.enqueue(*[openai_text("spare") for _ in range(turns // 10 + 100)])


def run_turns(llm: FakeLLM, port: int, first: int, count: int) -> float:
    """POST `count` webhook turns, at most 20 waiting; returns seconds until all were delivered."""
    start = time.perf_counter()
    target = len(llm.delivered) + count
    delivery = {"channel": "webhook", "to": llm.sink_url}
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        for turn in range(first, first + count):
            while turn - first - (len(llm.delivered) - (target - count)) >= 20:
                time.sleep(0.005)
            llm.requests.clear()  # the fake keeps every request (the whole context): gigabytes over a long run
            llm.headers.clear()
            # 50 turns a session, so sessions come and go past the 64 kept open: the fake model reports no real
            # token counts, and one endless session would never be compacted
            body = {"message": f"turn {turn}", "session": f"budget-{turn // 50}", "delivery": delivery}
            reply = http.post(f"http://127.0.0.1:{port}/hooks/agent", json=body)
            reply.raise_for_status()
    while len(llm.delivered) < target:
        time.sleep(0.01)
    return time.perf_counter() - start


def budget(home: Path, turns: int) -> None:
    """`hermitcrab run` with all five servers: idle RSS per process, then RSS along `turns` webhook turns."""
    port = free_port()
    with running_fake_llm() as llm:
        env = {
            **os.environ,
            **fake_llm_env(home, llm, api_key="sk-bench"),
            "HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{port}",
            "HERMITCRAB_WEBHOOK_TOKEN": TOKEN,
        }
        log = home / "run.log"
        command = [sys.executable, "-m", "hermitcrab.host.cli", "run", "--mcp-config", str(stack_config(home))]
        with log.open("w") as stderr:
            process = subprocess.Popen(command, env=env, stderr=stderr)
        try:
            while "hermitcrab is running" not in log.read_text():
                assert process.poll() is None, log.read_text()
                time.sleep(0.1)
            time.sleep(20)
            print("resident memory (MB) of `hermitcrab run` and its five servers")
            show("idle, 20 s after start", stack_rss(process.pid))
            script_turns(llm, turns)
            done, step = 0, max(1, turns // 5)
            while done < turns:
                count = min(step, turns - done)
                seconds = run_turns(llm, port, done, count)
                done += count
                show(f"after {done:,} turns ({count / seconds:.0f}/s)", stack_rss(process.pid))
            time.sleep(130)
            show("idle again, 130 s later", stack_rss(process.pid))
        finally:
            process.kill()
            process.wait()


async def indexing(home: Path, kilobytes: int, embedder: str) -> float:
    """KB of Markdown a second: a fresh memory server indexing `kilobytes` of daily logs (its first search waits)."""
    workspace = home / f"index-{embedder}"
    (workspace / "memory").mkdir(parents=True)
    line = "- Met Alice at the climbing gym; we talked about the marathon in Porto and project {n} deadlines.\n"
    per_file = 20_000
    for day in range(kilobytes * 1000 // per_file):
        text = "".join(line.format(n=day * 1000 + n) for n in range(per_file // len(line)))
        (workspace / "memory" / f"2025-{1 + day // 28:02d}-{1 + day % 28:02d}.md").write_text(text)
    size = sum(path.stat().st_size for path in workspace.rglob("*.md"))
    server = memory_server(workspace, home / f"state-{embedder}", make_embedder(embedder), watch=False)
    start = time.perf_counter()
    async with Client(server) as client:
        await client.call_tool("memory_search", {"query": "marathon"})
    return size / 1000 / (time.perf_counter() - start)


def overheads(args: argparse.Namespace, home: Path) -> None:
    print("tool call round trip (stdio test server, tool `add`)")
    print(f"  bare mcp.Client.call_tool              {summary(anyio.run(bare_client, args.calls))}")
    print(f"  McpPool.call (routing, timeout guard)  {summary(anyio.run(through_pool, args.calls))}")
    print("whole turn, scripted model: message -> tool call -> answer, transcript on disk")
    print(f"  Gateway.process                        {summary(anyio.run(whole_turns, args.turns, home))}")
    print("hermitcrab ask, cold start to exit (scripted LLM on 127.0.0.1)")
    print(f"  no MCP servers                         {summary(cli_start(args.cli_runs, home, False))}")
    print(f"  one stdio MCP server                   {summary(cli_start(args.cli_runs, home, True))}")
    to_model, to_reply, to_exit = cold_ask(args.cli_runs + 1, home)
    print(f"  five default servers, first run        to the model_ms={to_model[0] * 1000:8.3f}")
    print(f"  five default servers, to the model     {summary(to_model[1:])}")
    print(f"  five default servers, to the reply     {summary(to_reply[1:])}")
    print(f"  five default servers, to exit          {summary(to_exit[1:])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument("--budget-turns", type=int, default=10_000)
    parser.add_argument("--index-kb", type=int, default=2_000)
    parser.add_argument("--only", choices=["overheads", "budget", "cold"])
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per webhook request otherwise
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        if args.only == "cold":
            to_model, to_reply, to_exit = cold_ask(args.cli_runs + 1, home)
            first = f"first run (no tool lists kept yet): to the model {to_model[0] * 1000:.0f} ms"
            print(f"ask with five default servers: {first}, to exit {to_exit[0] * 1000:.0f} ms")
            print(f"  then {args.cli_runs} runs: to the model  {summary(to_model[1:])}")
            print(f"  {'':{len(str(args.cli_runs)) + 10}}to the reply  {summary(to_reply[1:])}")
            print(f"  {'':{len(str(args.cli_runs)) + 10}}to exit       {summary(to_exit[1:])}")
            return
        if args.only != "budget":
            overheads(args, home)
        if args.only != "overheads":
            print(f"memory indexing, {args.index_kb:,} KB of daily logs, fresh state")
            for embedder in ("use", "none"):
                print(f"  embedder {embedder:5} {anyio.run(indexing, home, args.index_kb, embedder):8.0f} KB/s")
            budget(home / "stack", args.budget_turns)


if __name__ == "__main__":
    main()
