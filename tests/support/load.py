"""Load through the real gateway, pool and servers with an instant model: many sessions at once, and a server's
queue of events. Shared by tests/host/test_load.py (small) and bench/load.py (50 sessions, 1,000 items)."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.triggers import relay_server_events
from hermitcrab.host.mcp.pool import McpPool, ServerEvent
from hermitcrab.host.providers import Completion, Message, TextSink, ToolCall, ToolSpec, Usage
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel


class EchoProvider:
    """Answers a user message with one memory_append of it, then with "re: <message>": no script to run out of,
    and a reply that says which message it answers."""

    label = "echo"

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion:
        last = messages[-1]
        user = next(m.content for m in reversed(messages) if m.role == "user")
        if last.role == "user" and any(tool.name == "memory_append" for tool in tools) and "[load]" in user:
            reply = Message("assistant", "", (ToolCall(f"c{len(messages)}", "memory_append", {"text": user}),))
        else:
            reply = Message("assistant", f"re: {user}")
        return Completion(reply, Usage(10, 1), model="echo", provider=self.label)


@dataclass
class LoadResult:
    sent: int
    answered: int
    dropped: int
    reordered: int
    cross_talk: int
    turn_ms_p50: float
    turn_ms_p99: float
    seconds: float
    noted: int = 0


def _memory(home: Path) -> ServerConfig:
    args = ("-m", "hermitcrab.servers.memory", "--workspace", str(home / "workspace"), "--state", str(home / "mem"))
    return ServerConfig("memory", command=sys.executable, args=(*args, "--embedder", "none"))


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples) or [0.0]
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 2)


async def sessions_at_once(home: Path, sessions: int, messages: int) -> LoadResult:
    """`sessions` conversations each sending `messages` at once (each turn: a memory_append over stdio, a reply)."""
    settings = Settings(home=home, providers=(), servers=(_memory(home),), agent=AgentSettings())
    channel = RecordingChannel("load")  # every reply by conversation, and each turn's time from typing to reply
    async with McpPool(settings.servers) as pool, anyio.create_task_group() as group:
        agent = Agent(settings, EchoProvider(), pool, SessionStore(home / "sessions"))
        gateway = Gateway(agent, {channel.name: channel}, ask_timeout_s=1)
        await group.start(gateway.serve)
        start = time.perf_counter()
        for number in range(messages):
            for session in range(sessions):
                target = Target(channel.name, f"s{session}", f"user{session}")
                await gateway.submit(
                    Event("message", f"[load] s{session} m{number}", target, f"load-{session}", principal=OWNER)
                )
        with anyio.fail_after(30 + sessions * messages * 0.5):
            while sum(map(len, channel.replies.values())) < sessions * messages:
                await anyio.sleep(0.01)
        seconds = time.perf_counter() - start
        group.cancel_scope.cancel()
    notes = "".join(path.read_text() for path in (home / "workspace" / "memory").glob("*.md"))
    return replace(_score(channel, sessions, messages, seconds), noted=notes.count("[load]"))


def _score(channel: RecordingChannel, sessions: int, messages: int, seconds: float) -> LoadResult:
    dropped = reordered = cross_talk = 0
    for session in range(sessions):
        got = channel.replies.get(f"s{session}", [])
        expected = [f"re: [load] s{session} m{number}" for number in range(messages)]
        cross_talk += sum(1 for reply in got if not reply.startswith(f"re: [load] s{session} "))
        dropped += len(set(expected) - set(got))
        reordered += int([reply for reply in got if reply in expected] != [e for e in expected if e in got])
    answered = sum(map(len, channel.replies.values()))
    p50 = round(statistics.median(channel.turn_s) * 1000, 2) if channel.turn_s else 0.0
    return LoadResult(
        sessions * messages, answered, dropped, reordered, cross_talk, p50, _p(channel.turn_s, 0.99), seconds
    )


@dataclass
class QueueResult:
    items: int
    handled: int
    duplicates: int
    still_waiting: int
    seconds: float


async def queued_events(home: Path, items: int) -> QueueResult:
    """`items` cron_wake items queued on the cron server before the host reads them: each is run once and acked."""
    cron = ServerConfig(
        "cron", command=sys.executable, args=("-m", "hermitcrab.servers.cron", "--state", str(home / "cron"))
    )
    settings = Settings(home=home, providers=(), servers=(cron,), agent=AgentSettings())
    channel = RecordingChannel("load")  # every reply by conversation, and each turn's time from typing to reply
    ids: Counter[str] = Counter()
    send, receive = anyio.create_memory_object_stream[ServerEvent](10_000)
    async with McpPool([cron], on_event=send.send) as pool, anyio.create_task_group() as group:
        for number in range(items):
            assert not (await pool.call("cron_wake", {"text": f"wake {number}"})).is_error
        gateway = Gateway(
            Agent(settings, EchoProvider(), pool, SessionStore(home / "sessions")), {"load": channel}, ask_timeout_s=1
        )

        async def submit(event: Event) -> None:
            inner = event.on_done

            async def done(ok: bool, error: str | None) -> None:
                if ok:
                    ids[str(event.metadata["event_id"])] += 1
                if inner is not None:
                    await inner(ok, error)

            await gateway.submit(replace(event, on_done=done))

        await group.start(gateway.serve)
        start = time.perf_counter()
        group.start_soon(relay_server_events, receive, pool, submit, lambda: Target("load", "x"))
        with anyio.fail_after(30 + items * 0.5):
            while len(ids) < items:
                await anyio.sleep(0.05)
            while (waiting := await _waiting(pool)) > 0:
                await anyio.sleep(0.05)
        seconds = time.perf_counter() - start
        group.cancel_scope.cancel()
    return QueueResult(items, len(ids), sum(n - 1 for n in ids.values()), waiting, seconds)


async def _waiting(pool: McpPool) -> int:
    return int(json.loads((await pool.call("cron_status", {})).text).get("pending_events") or 0)
