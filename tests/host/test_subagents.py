"""The host side of sub-agents, with the real spawn server over stdio: calls carry their session in `_meta`, running
children appear in the runtime facts and /status, and a finished run becomes a `subagent` turn in its parent session."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import takewhile
from pathlib import Path
from typing import Any

import anyio

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.commands import status
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.triggers import relay_server_events
from hermitcrab.host.mcp.pool import McpPool, ServerEvent
from hermitcrab.host.providers import Message
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel
from tests.support.fences import fenced
from tests.support.scripted_provider import ScriptedProvider
from tests.support.spawn import FAKE_CLI

CHAT = Target("test", "chat-7", "ada")


def spawn_server(state: Path) -> ServerConfig:
    clis = [f"slow={sys.executable} {FAKE_CLI} --sleep 60 --stdin", f"echo={sys.executable} {FAKE_CLI} --stdin"]
    flags = [flag for cli in clis for flag in ("--cli", cli)]
    return ServerConfig(
        "spawn", command=sys.executable, args=("-m", "hermitcrab.servers.spawn", "--state", str(state), *flags)
    )


@asynccontextmanager
async def host(tmp_path: Path, provider: ScriptedProvider, channel: RecordingChannel) -> AsyncIterator[Gateway]:
    """A pool with the spawn server, a gateway and the relay, wired as `hermitcrab run` wires them."""
    send, receive = anyio.create_memory_object_stream[ServerEvent](100)
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    async with (
        McpPool([spawn_server(tmp_path / "spawn")], on_event=send.send) as pool,
        anyio.create_task_group() as group,
    ):
        agent = Agent(settings, provider, pool, SessionStore(tmp_path / "sessions"))
        gateway = Gateway(agent, {"test": channel}, ask_timeout_s=1)
        await group.start(gateway.serve)
        group.start_soon(relay_server_events, receive, pool, gateway.submit, lambda: CHAT)
        yield gateway
        group.cancel_scope.cancel()


def told(request: dict[str, Any]) -> str:
    """What a request tells the model of its turn: the system prompt and the turn's own messages (its runtime note
    and text, after the history's last answer)."""
    messages: list[Message] = request["messages"]
    own = list(takewhile(lambda message: message.role == "user", reversed(messages)))
    return "\n".join([request["system"], *(message.content for message in reversed(own))])


def spawn_call(call_id: str, cli: str, label: str) -> tuple[str, str, dict[str, object]]:
    return (call_id, "sessions_spawn", {"task": f"{label} task", "label": label, "runtime": "cli", "cli": cli})


async def test_a_running_child_shows_in_its_sessions_prompt_and_status_and_nowhere_else(tmp_path: Path):
    provider = ScriptedProvider().call(spawn_call("c1", "slow", "research")).say("Started.").say("Still waiting.")
    async with host(tmp_path, provider, RecordingChannel()) as gateway:
        await gateway.process(Event("message", "look into it", CHAT, session_key="chat-7", principal=OWNER))
        await gateway.process(Event("message", "and?", CHAT, session_key="chat-7", principal=OWNER))
        own = await status(gateway.agent, Event("message", "/status", CHAT, session_key="chat-7", principal=OWNER))
        other = await status(gateway.agent, Event("message", "/status", CHAT, session_key="main", principal=OWNER))

    spawned = json.loads(provider.seen[1]["messages"][-1].content)
    assert spawned["status"] == "accepted"
    assert "Sub-agents still working" not in told(provider.seen[0])
    assert 'Sub-agents still working for this session (1): "research" (run ' in told(provider.seen[2])
    assert "wait for all of them before you give your final answer" in told(provider.seen[2])
    assert f'Sub-agents running:\n- "research" (run {spawned["run_id"]}, ' in own
    assert "Sub-agents running: none" in other


async def test_a_finished_run_is_a_subagent_turn_in_its_parent_session_then_acknowledged(tmp_path: Path):
    provider = ScriptedProvider().call(spawn_call("c1", "echo", "lookup")).say("On it.").say("The lookup is done.")
    channel = RecordingChannel()
    async with host(tmp_path, provider, channel) as gateway:
        await gateway.process(Event("message", "look it up", CHAT, session_key="chat-7", principal=OWNER))
        with anyio.fail_after(10):
            while len(channel.sent) < 2:
                await channel.next_message()
            while "announced=True" not in repr(await _runs(gateway)):
                await anyio.sleep(0.05)
        transcript = gateway.agent.session("chat-7").transcript.entries()

    announcement = provider.seen[2]["messages"][-1].content
    assert fenced(announcement) == (
        "a sub-agent's result, set up by the owner in session 'chat-7'",
        '[event from spawn]\n[sub-agent lookup finished: ok] ["lookup task"]',
    )
    assert [text for _, text in channel.sent] == ["On it.", "The lookup is done."]
    assert [entry["kind"] for entry in transcript].count("event") == 1


async def _runs(gateway: Gateway) -> list[str]:
    assert gateway.agent.pool is not None
    listed = await gateway.agent.pool.call("sessions_list", {}, "chat-7")
    return [f"announced={run['announced']}" for run in json.loads(listed.text)["runs"]]


async def test_a_turn_asks_spawn_only_when_something_may_have_changed(tmp_path: Path):
    provider = ScriptedProvider().say("Hi.").say("Hi again.").call(spawn_call("c1", "slow", "research")).say("On it.")
    asks: list[str | None] = []

    def count(server: str, tool: str | None, session: str | None) -> None:
        if tool == "sessions_list":
            asks.append(session)

    async with host(tmp_path, provider, RecordingChannel()) as gateway:
        assert gateway.agent.pool is not None
        gateway.agent.pool.observers.append(count)

        async def say(text: str, reply: str | None = None) -> str:
            if reply is not None:
                provider.say(reply)
            await gateway.process(Event("message", text, CHAT, session_key="chat-7", principal=OWNER))
            return told(provider.seen[-1])

        await say("hello")
        await say("hello again")
        assert asks == ["chat-7"]  # the second turn: nothing changed, no round trip
        await say("research it")
        run_id = json.loads(provider.seen[3]["messages"][-1].content)["run_id"]
        assert f'"research" (run {run_id}, ' in await say("and?", "Waiting.")  # the spawn call: asked again
        asked = len(asks)
        provider.call(("c2", "sessions_kill", {"run_id": run_id})).say("Stopped.").say("Noted: it was killed.")
        await say("stop it")
        with anyio.fail_after(30):  # generous: the kill's event reaches the host through the relay, then a turn
            while "Sub-agents still working" in await say("done?", "Done."):
                await anyio.sleep(0.1)
        assert len(asks) > asked
