"""The agent over a real stdio MCP server: two turns with the server killed in between."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel, run_turn_with_servers
from tests.support.scripted_provider import ScriptedProvider

TEST_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")
ROOM = Target("test", "room")


async def test_a_server_killed_between_two_turns_is_restarted(tmp_path: Path):
    provider = ScriptedProvider().call(("t1", "pid", {})).say("first").call(("t2", "pid", {})).say("second")
    kit = ServerConfig("kit", command=sys.executable, args=(TEST_SERVER,))
    settings = Settings(home=tmp_path, providers=(), servers=(kit,), agent=AgentSettings())

    async with McpPool(settings.servers) as pool:
        gateway = Gateway(
            Agent(settings, provider, pool, SessionStore(tmp_path / "sessions")),
            {"test": RecordingChannel()},
            ask_timeout_s=1,
        )
        await gateway.process(Event("message", "turn one", ROOM, principal=OWNER))
        first_pid = int(provider.seen[1]["messages"][-1].content)
        os.kill(first_pid, signal.SIGKILL)
        with anyio.fail_after(10):
            while pool.handles["kit"].restarts == 0:
                await anyio.sleep(0.02)
        await gateway.process(Event("message", "turn two", ROOM, principal=OWNER))

    second = provider.seen[3]["messages"][-1]
    assert not second.is_error
    assert int(second.content) != first_pid


async def test_the_newest_message_carries_the_runtime_facts_and_the_system_prompt_the_lasting_ones(tmp_path: Path):
    provider = ScriptedProvider().say("ok")
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings(timezone="Asia/Tokyo"))
    agent = Agent(settings, provider, None, SessionStore(tmp_path / "sessions"))

    alice = Target("test", "room", "alice")

    await Gateway(agent, {"test": RecordingChannel()}, ask_timeout_s=1).process(
        Event("message", "hi", alice, principal=OWNER)
    )

    system, (note, said) = provider.seen[0]["system"], provider.seen[0]["messages"][-2:]
    assert "(JST)" in note.content and "Channel: test" in note.content
    assert "From: the owner in conversation 'room'" in note.content and said.content == "hi"
    assert "ask_user, message" in system and "(JST)" not in system
    assert "[missing: AGENTS.md does not exist in the workspace]" in system


async def test_server_elicitation_is_asked_in_the_conversation_that_called_the_tool(tmp_path: Path):
    provider = ScriptedProvider().call(("g", "guarded", {"action": "deploy"})).say("deployed")
    kit = ServerConfig("kit", command=sys.executable, args=(TEST_SERVER,))
    settings = Settings(home=tmp_path, providers=(), servers=(kit,), agent=AgentSettings())
    room = RecordingChannel(answer="allow-always")

    await run_turn_with_servers(settings, provider, room, Event("message", "ship it", ROOM, principal=OWNER))

    origin, question = room.texts[0].split("\n", 1)
    assert origin == "For the owner, in session 'main':"  # every approval names whom and which session it is for
    assert question.startswith("The kit server asks:\n```\nAllow deploy?\n```") and "- allow-always" in question
    assert provider.seen[1]["messages"][-1].content == "deploy: allow-always"
    assert room.texts[-1] == "deployed"
