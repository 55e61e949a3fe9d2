"""Crash trials: each part with durable state (and `run` answering Discord messages) works under load, is killed
with SIGKILL at a random moment, is started again on the same state, and is checked. A trial returns what it found
wrong (nothing, when it passed).

Shared by tests/e2e/test_chaos.py (a few trials per part) and bench/chaos.py (100 per part).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from hermitcrab.host.session.transcript import SessionStore
from tests.support.discord_host import STREAMED, start_run
from tests.support.fake_discord import OWNER, running_fake_discord
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls
from tests.support.spawn import FAKE_CLI

ROOT = Path(__file__).parents[2]
TEST_SERVER = str(ROOT / "tests" / "support" / "mcp_test_server.py")
Trial = Callable[[Path, random.Random], Awaitable[list[str]]]


def _children(marker: str) -> list[int]:
    """Our child processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and marker in (entry / "cmdline").read_text().replace("\0", " "):
                found.append(int(entry.name))
    return found


def alive_with(marker: str) -> list[int]:
    """Live (non-zombie) processes anywhere whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z" and marker in (entry / "cmdline").read_text().replace("\0", " "):
                found.append(int(entry.name))
    return found


@asynccontextmanager
async def server(module: str, *args: str) -> AsyncIterator[tuple[Client, int]]:
    """A server of ours over stdio and its pid; leaving is quiet even when the server was killed."""
    client = Client(StdioServerParameters(command=sys.executable, args=["-m", module, *args]))
    await client.__aenter__()
    try:
        pids = _children(module)
        assert len(pids) == 1, pids
        yield client, pids[0]
    finally:
        with suppress(Exception):  # a killed server's session ends with a broken pipe
            await client.__aexit__(None, None, None)


async def under_load(pid: int, kill_after: float, *workers: Callable[[], Awaitable[None]]) -> list[str]:
    """Run `workers` until `pid` is killed with SIGKILL `kill_after` seconds in (they end on the broken pipe);
    returns how workers failed before the kill."""
    failures: list[str] = []
    killed = False

    async def guarded(worker: Callable[[], Awaitable[None]]) -> None:
        try:
            await worker()
        except Exception as exc:  # after the kill every call fails; before it, that is a finding
            if not killed:
                failures.append(f"before the kill: {type(exc).__name__}: {exc}"[:300])

    with anyio.move_on_after(kill_after + 10):
        async with anyio.create_task_group() as group:
            for worker in workers:
                group.start_soon(guarded, worker)
            await anyio.sleep(kill_after)
            killed = True
            os.kill(pid, signal.SIGKILL)
    return failures


def _structured(result: Any) -> dict[str, Any]:
    if result.is_error:
        raise RuntimeError(str(result.content)[:200])
    return result.structured_content or {}


# exec: write_file and edit_file running -> each file the old or the new content, never a mix.

BODY = 200_000


def _version(number: int) -> str:
    return f"v{number}\n" + chr(ord("a") + number % 26) * BODY + "\n"


def _whole(text: str) -> bool:
    header, _, body = text.partition("\n")
    number = header.removeprefix("v").removesuffix("e")
    return number.isdigit() and body == chr(ord("a") + int(number) % 26) * BODY + "\n"


async def exec_trial(base: Path, rng: random.Random) -> list[str]:
    root, state = base / "root", base / "state"
    root.mkdir(parents=True)
    names = [f"f{index}.txt" for index in range(4)]
    for name in names:
        (root / name).write_text(_version(0))
    args = ("--root", str(root), "--state", str(state))
    async with server("hermitcrab.servers.exec", *args) as (client, pid):

        def writer(name: str) -> Callable[[], Awaitable[None]]:
            async def work() -> None:
                for number in range(1, 10_000):
                    _structured(await client.call_tool("write_file", {"path": name, "content": _version(number)}))
                    edit = {"path": name, "old_text": f"v{number}\n", "new_text": f"v{number}e\n"}
                    _structured(await client.call_tool("edit_file", edit))

            return work

        failures = await under_load(pid, rng.uniform(0.3, 1.5), *(writer(name) for name in names))
    failures += [f"{name} is a mix of versions" for name in names if not _whole((root / name).read_text())]
    if all((root / name).read_text() == _version(0) for name in names):
        failures.append("no write finished before the kill")
    async with server("hermitcrab.servers.exec", *args) as (client, _):
        for name in names:
            if (await client.call_tool("read_file", {"path": name, "limit": 1})).is_error:
                failures.append(f"{name} unreadable after the restart")
    return failures


# memory: appends and re-indexing running -> every acknowledged append on disk once and found after restart.


async def memory_trial(base: Path, rng: random.Random, embedder: str = "none") -> list[str]:
    workspace, state = base / "workspace", base / "state"
    args = ("--workspace", str(workspace), "--state", str(state), "--embedder", embedder)
    acked: list[str] = []
    async with server("hermitcrab.servers.memory", *args) as (client, pid):

        async def append(count: int = 10_000) -> None:
            for number in range(count):
                token = f"kiwi{rng.randrange(10**9)}x{number}"
                _structured(await client.call_tool("memory_append", {"text": f"- chaos note {token}"}))
                acked.append(token)

        async def search() -> None:
            while True:
                _structured(await client.call_tool("memory_search", {"query": "chaos note"}))

        await append(1)  # the kill's clock starts once the server answers: with vectors, loading the model takes ~1 s
        failures = await under_load(pid, rng.uniform(0.5, 2.5), append, append, search)
    text = "".join(path.read_text() for path in sorted(workspace.rglob("*.md")))
    failures += [f"append {token} on disk {text.count(token)} times" for token in acked if text.count(token) != 1]
    async with server("hermitcrab.servers.memory", *args) as (client, _):
        for token in acked[-5:]:
            found = _structured(await client.call_tool("memory_search", {"query": token}))["results"]
            if not any(token in hit["snippet"] for hit in found):
                failures.append(f"append {token} not found by memory_search after the restart")
        status = _structured(await client.call_tool("memory_status", {}))
        if status["last_error"]:
            failures.append(f"memory_status after the restart: {status['last_error']}")
    if not acked:
        failures.append("no append was acknowledged before the kill")
    return failures


# cron: jobs firing -> no run twice, no overdue job lost.


async def cron_trial(base: Path, rng: random.Random) -> list[str]:
    state = base / "state"
    kill_after = rng.uniform(0.5, 2.5)
    async with server("hermitcrab.servers.cron", "--state", str(state), "--min-interval-s", "0") as (client, pid):
        for number in range(5):
            job = {
                "name": f"tick {number}",
                "schedule": {"kind": "every", "every_seconds": 1},
                "payload": {"kind": "system_event", "text": f"tick {number}"},
            }
            _structured(await client.call_tool("cron_add", {"job": job}))
        overdue_at = datetime.now(UTC) + timedelta(seconds=kill_after + 1.5)  # from now: a slow start must not pass it
        at = {"kind": "at", "at": overdue_at.isoformat()}
        overdue = {"name": "overdue", "schedule": at, "payload": {"kind": "system_event", "text": "due while down"}}
        _structured(await client.call_tool("cron_add", {"job": overdue}))
        failures = await under_load(pid, kill_after)
    await anyio.sleep(max(0.0, (overdue_at - datetime.now(UTC)).total_seconds()) + 0.5)
    async with server("hermitcrab.servers.cron", "--state", str(state)) as (client, _):
        await anyio.sleep(2.5)
        items = json.loads((await client.read_resource("cron://events")).contents[0].text)["items"]  # type: ignore[union-attr]
    return failures + _cron_failures(state, items)


def _cron_failures(state: Path, items: list[dict[str, Any]]) -> list[str]:
    failures = [f"event {key} queued {n} times" for key, n in Counter(i["id"] for i in items).items() if n > 1]
    queued: Counter[str] = Counter()
    for path in (state / "runs").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("status") == "queued":
                queued[f"{record['job_id']}:{record['run_id']}"] += 1
    failures += [f"run {key} queued {n} times" for key, n in queued.items() if n > 1]
    if sum(1 for item in items if "due while down" in item["text"]) != 1:
        failures.append("the job that fell due while the server was down did not run exactly once")
    return failures


# spawn: runs finishing -> every finished run announced exactly once, no orphan processes.


async def spawn_trial(base: Path, rng: random.Random) -> list[str]:
    state = base / "state"
    marker = f"chaos{rng.randrange(10**9)}"
    cli = f"slowish={sys.executable} {FAKE_CLI} --grandchild --sleep {{task}} {marker}"
    args = ("--state", str(state), "--cli", cli)
    runs: list[str] = []
    async with server("hermitcrab.servers.spawn", *args) as (client, pid):

        async def spawn() -> None:
            for _ in range(5):  # the most one session may have active
                task = f"{rng.uniform(0.1, 1.2):.2f}"
                spec = {"task": task, "runtime": "cli", "cli": "slowish"}
                runs.append(_structured(await client.call_tool("sessions_spawn", spec))["run_id"])
                await anyio.sleep(rng.uniform(0, 0.3))

        failures = await under_load(pid, rng.uniform(0.3, 2.0), spawn)
    items: list[dict[str, Any]] = []
    async with server("hermitcrab.servers.spawn", *args) as (client, _):
        with anyio.move_on_after(20):
            while len({item["run_id"] for item in items}) < len(runs):
                await anyio.sleep(0.2)
                items = json.loads((await client.read_resource("spawn://events")).contents[0].text)["items"]  # type: ignore[union-attr]
    counts = Counter(item["run_id"] for item in items)
    failures += [f"run {run} announced {counts[run]} times" for run in runs if counts[run] != 1]
    if not runs:
        failures.append("no run was spawned before the kill")
    deadline = time.monotonic() + 5
    while alive_with(marker) and time.monotonic() < deadline:
        await anyio.sleep(0.1)
    if orphans := alive_with(marker):
        failures.append(f"{len(orphans)} processes of runs outlived the server")
        for orphan in orphans:
            with suppress(OSError):
                os.kill(orphan, signal.SIGKILL)
    return failures


# host: turns running -> every transcript readable, entries written before the kill kept, no dangling tool call.


def host_trial_for(llm: FakeLLM, kills: int = 2) -> Trial:
    """The host's trial against a fake OpenAI-compatible LLM on 127.0.0.1: `kills` turns killed, then one more."""

    async def trial(base: Path, rng: random.Random) -> list[str]:
        home = base / "home"
        config = base / "desktop.json"
        config.write_text(json.dumps({"mcpServers": {"kit": {"command": sys.executable, "args": [TEST_SERVER]}}}))
        env = {**os.environ, "HERMITCRAB_HOME": str(home), "HERMITCRAB_LLM_BASE_URL": llm.url}
        command = [sys.executable, "-m", "hermitcrab.host.cli", "ask", "--mcp-config", str(config)]
        failures: list[str] = []
        for turn in range(kills):
            llm.script.clear()
            for call in range(200):
                llm.enqueue(openai_tool_calls((f"t{turn}c{call}", "add", json.dumps({"a": call, "b": 1}))))
            before = _entries(home)
            process = subprocess.Popen(
                [*command, f"turn {turn}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            with anyio.move_on_after(20):
                while len(_entries(home)) <= len(before):  # the turn has begun: kill it somewhere inside
                    await anyio.sleep(0.02)
            await anyio.sleep(rng.uniform(0.0, 1.5))
            kept = _entries(home)
            process.kill()
            process.wait()
            failures += _host_failures(home, kept, before)
        llm.script.clear()
        llm.enqueue(openai_text("all good"))
        done = subprocess.run([*command, "and now?"], env=env, capture_output=True, text=True, timeout=60)
        if done.returncode != 0 or "all good" not in done.stdout:
            failures.append(f"the session did not go on after the kills: {done.stderr[-300:]}")
        return failures

    return trial


def _entries(home: Path) -> list[str]:
    """Ids of the whole entries in the main session's transcripts, in file order."""
    ids = []
    for path in sorted((home / "state" / "sessions").glob("*.jsonl")):
        for line in path.read_bytes().split(b"\n")[:-1]:
            with suppress(ValueError):
                ids.append(json.loads(line)["id"])
    return ids


def _host_failures(home: Path, kept: list[str], before: list[str]) -> list[str]:
    after = _entries(home)
    failures = (
        [f"{len(set(kept) - set(after))} entries written before the kill are gone"] if set(kept) - set(after) else []
    )
    if len(after) <= len(before):
        failures.append("the killed turn wrote nothing (killed before it started?)")
    messages = SessionStore(home / "state" / "sessions").open("main").messages()
    calls = {call.id for message in messages for call in message.tool_calls}
    results = {message.tool_call_id for message in messages if message.role == "tool"}
    if calls - results:
        failures.append(f"{len(calls - results)} tool calls without a result in the model's view")
    return failures


# messages: the owner's DMs over Discord while `hermitcrab run` is killed at a random moment of a slow answer
# -> every message answered exactly once (the answer, or the restart notice), none lost, none doubled.


def messages_trial_for(llm: FakeLLM, kills: int = 3) -> Trial:
    """`kills` DMs, each with `run` killed 0-1.5 s after it was sent and started again; each must get one reply,
    streamed (the kill often comes while its draft is on screen) and finished: the answer or the restart notice."""

    async def trial(base: Path, rng: random.Random) -> list[str]:
        return await anyio.to_thread.run_sync(_messages_trial, base, rng, llm, kills)

    return trial


def _messages_trial(base: Path, rng: random.Random, llm: FakeLLM, kills: int) -> list[str]:
    home = base / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'[heartbeat]\nevery_minutes = 0\n\n[discord]\nowners = ["{OWNER}"]\n')
    llm.script.clear()
    with running_fake_discord() as discord:
        run = start_run(home, llm, discord, base / "run-0.log", env=STREAMED)
        messages: list[str] = []
        try:
            for kill in range(kills):
                slow = rng.uniform(0.2, 1.0)
                answer = f"answer {kill}: " + " ".join(["word"] * 20) + " done."
                llm.enqueue(*(Reply(openai_text(answer), delay_s=slow, event_delay_s=0.03) for _ in range(2)))
                messages.append(discord.user_says(OWNER, f"question {kill}"))
                time.sleep(rng.uniform(0.0, 1.5))  # before, during or after the model's answer and its delivery
                run.kill()
                run = start_run(home, llm, discord, base / f"run-{kill + 1}.log", env=STREAMED)

            def answered(message: str) -> bool:
                shown = discord.replies_to(message)
                return bool(shown) and all(_ended(sent.content) for sent in shown)

            deadline = time.monotonic() + 30
            while not all(map(answered, messages)) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # a second reply to any of them would have come by now
        finally:
            run.kill()
        said = [[sent.content for sent in discord.replies_to(message)] for message in messages]
    llm.script.clear()
    return [f"message {n} answered {shown}" for n, shown in enumerate(said) if len(shown) != 1 or not _ended(shown[0])]


def _ended(reply: str) -> bool:
    """A finished reply: the answer or the restart notice, never a draft left half written."""
    return reply.endswith(" done.") or reply.startswith("I restarted")
