"""The memory flush and session-end capture against the real memory server over MCP (stdio, no embedder)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.errors import ContextOverflowError
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.providers import ToolSpec
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from hermitcrab.host.turn.flush import memory_tools
from hermitcrab.host.turn.loop import run_turn
from tests.support.channels import RecordingChannel
from tests.support.scripted_provider import ScriptedProvider
from tests.support.toolboxes import Toolbox

ROOM = Target("test", "room-1", "alice")
SMALL = AgentSettings(context_window_tokens=8_000, reserve_tokens=1_000, keep_recent_tokens=2_000)
NOTE = "- The staging database moved to db-7.internal:5433 (decided 2026-12-01)."


@pytest.fixture
async def memory_pool(hermitcrab_home: Path) -> AsyncIterator[McpPool]:
    workspace = hermitcrab_home / "workspace"
    (workspace / "memory").mkdir(parents=True)
    args = ("-m", "hermitcrab.servers.memory", "--workspace", str(workspace), "--embedder", "none")
    args += ("--state", str(hermitcrab_home / "state" / "memory"))
    async with McpPool([ServerConfig("memory", command=sys.executable, args=args)]) as pool:
        yield pool


def gateway_for(home: Path, provider: ScriptedProvider, pool: McpPool, channel: RecordingChannel) -> Gateway:
    settings = Settings(home=home, providers=(), servers=(), agent=SMALL)
    agent = Agent(settings, provider, pool, SessionStore(settings.state / "sessions"))
    return Gateway(agent, {"test": channel}, ask_timeout_s=1)


def fill(gateway: Gateway, turns: int) -> None:
    transcript = gateway.agent.session("main").transcript
    for index in range(turns):
        transcript.append("user", text=f"turn {index} " + "m" * 3_000)
        transcript.append("assistant", text=f"reply {index}")


def kinds(gateway: Gateway) -> list[tuple[str, bool]]:
    entries = gateway.agent.session("main").transcript.entries()
    return [(e["kind"], bool(e.get("flush"))) for e in entries if e["kind"] in ("user", "assistant", "compaction")]


def flush_script() -> ScriptedProvider:
    provider = ScriptedProvider(summary="- summary of the older turns")
    return provider.call(("f1", "memory_append", {"text": NOTE})).say("NO_REPLY")


def daily_logs(home: Path) -> str:
    return "".join(p.read_text() for p in sorted((home / "workspace" / "memory").glob("*.md")))


async def test_the_flush_runs_before_compaction_at_the_threshold_and_its_no_reply_is_not_delivered(
    hermitcrab_home: Path, memory_pool: McpPool
):
    channel = RecordingChannel()
    provider = flush_script().say("Here is the answer.")
    gateway = gateway_for(hermitcrab_home, provider, memory_pool, channel)
    fill(gateway, 10)

    await gateway.process(Event("message", "what next?", ROOM, principal=OWNER))

    assert [text for _, text in channel.sent] == ["Here is the answer."]
    assert provider.seen[0]["tools"] == ["memory_append"] and "NO_REPLY" in provider.seen[0]["messages"][-1].content
    assert NOTE in daily_logs(hermitcrab_home)
    assert kinds(gateway)[-6:] == [
        ("user", False),
        ("user", True),
        ("assistant", True),
        ("assistant", True),
        ("compaction", False),
        ("assistant", False),
    ]
    final = provider.seen[-1]["messages"]
    assert not any("Memory flush" in m.content for m in final)  # the flush turn is not part of the view


async def test_compact_and_overflow_recovery_flush_first(hermitcrab_home: Path, memory_pool: McpPool):
    channel = RecordingChannel()
    provider = flush_script()
    gateway = gateway_for(hermitcrab_home, provider, memory_pool, channel)
    fill(gateway, 3)

    said = await gateway.process(Event("message", "/compact", ROOM, principal=OWNER))

    assert (said or "").startswith("Compacted")
    assert provider.seen[0]["tools"] == ["memory_append"] and not provider.seen[-1]["tools"]
    assert NOTE in daily_logs(hermitcrab_home)

    class Overflowing(ScriptedProvider):
        refused = False

        async def complete(self, system, messages, tools, on_delta=None):
            if "ask_user" in [t.name for t in tools] and not self.refused:
                self.refused = True
                raise ContextOverflowError("HTTP 400: maximum context length exceeded")
            return await super().complete(system, messages, tools, on_delta)

    second = hermitcrab_home / "second"
    overflowing = Overflowing(summary="- summary").call(("f2", "memory_append", {"text": "- flushed on overflow"}))
    overflowing.say("NO_REPLY").say("after the retry")
    again = gateway_for(second, overflowing, memory_pool, channel)
    fill(again, 3)

    assert await again.process(Event("message", "go", ROOM, principal=OWNER)) == "after the retry"
    assert [r["tools"] == ["memory_append"] for r in overflowing.seen[:3]] == [True, True, False]
    assert "flushed on overflow" in daily_logs(hermitcrab_home)


async def test_without_a_memory_tool_the_flush_is_skipped_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level("INFO")
    session = SessionStore(tmp_path).open("main")
    for index in range(10):
        session.transcript.append("user", text=f"turn {index} " + "m" * 3_000)
        session.transcript.append("assistant", text="ok")
    provider = ScriptedProvider(summary="- summary").say("answer")

    result = await run_turn(
        provider=provider, toolbox=Toolbox(), session=session, system="S", user_text="go", settings=SMALL
    )

    assert result.reply == "answer"
    assert "memory flush skipped" in caplog.text and "no memory-writing tool" in caplog.text


def test_memory_tools_are_found_by_name_and_description():
    def spec(name: str, description: str = "") -> ToolSpec:
        return ToolSpec(name, description, {"type": "object"})

    ours = [spec("memory_search", "Search memory"), spec("memory_append", "Write something down in memory")]
    graph = [spec("create_entities", "Create entities in the knowledge graph"), spec("read_graph", "Read it")]
    files = [spec("exec__write_file", "Create or replace a file"), spec("read_file", "Read a text file")]
    assert [s.name for s in memory_tools(ours + files)] == ["memory_append"]
    assert [s.name for s in memory_tools(graph)] == ["create_entities"]
    assert [s.name for s in memory_tools(files)] == ["exec__write_file", "read_file"]
    assert memory_tools([spec("exec", "Run a command"), spec("read_file")]) == []


async def test_new_saves_the_last_messages_where_the_memory_server_finds_them(
    hermitcrab_home: Path, memory_pool: McpPool
):
    channel = RecordingChannel()
    provider = ScriptedProvider().say("Booked: the ferry to Texel leaves at 09:40 from Den Helder.")
    gateway = gateway_for(hermitcrab_home, provider, memory_pool, channel)
    await gateway.process(
        Event("message", "Please book the ferry to Texel for Saturday morning", ROOM, principal=OWNER)
    )

    said = await gateway.process(Event("message", "/new", ROOM, principal=OWNER))

    saved = list((hermitcrab_home / "workspace" / "memory").glob("*-ferry-texel*.md"))
    assert len(saved) == 1 and saved[0].name in (said or "")
    assert "09:40 from Den Helder" in saved[0].read_text()
    with anyio.fail_after(20):
        found = await memory_pool.call("memory_search", {"query": "when does the Texel ferry leave"})
    assert saved[0].name in found.text and "Den Helder" in json.loads(found.text)["results"][0]["snippet"]
    assert gateway.agent.session("main").messages() == []
