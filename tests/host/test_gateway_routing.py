"""The gateway routes chat messages by the host's rule, and a channel's own prompt races a typed answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio

from hermitcrab.host.config import Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.last_target import LastTarget
from hermitcrab.host.session.routing import DmScope
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel, button
from tests.support.scripted_provider import ScriptedProvider

ROOM = Target("im", "room-1", "alice", reply_to="m-1")


def prompting(answer: str | None) -> RecordingChannel:
    """An IM channel that shows questions with its own prompt, which answers `answer` unless it is None (then it
    waits until withdrawn), and takes its typing sign down after each turn."""
    return RecordingChannel("im", prompt=button(answer), idles=True)


def gateway(
    tmp_path: Path, provider: ScriptedProvider, channel: RecordingChannel, dm_scope: DmScope = "main"
) -> Gateway:
    agent = Agent(Settings(tmp_path, (), ()), provider, None, SessionStore(tmp_path / "sessions"))
    return Gateway(agent, {"im": channel}, ask_timeout_s=5, dm_scope=dm_scope)


async def wait_until(condition: Callable[[], object]) -> None:
    with anyio.fail_after(5):
        while not condition():
            await anyio.sleep(0.01)


async def test_a_chat_message_goes_to_the_session_the_rule_names(tmp_path: Path):
    channel = prompting("x")
    gw = gateway(tmp_path, ScriptedProvider().say("hi dm").say("hi group"), channel, dm_scope="per-peer")

    async with anyio.create_task_group() as group:
        await group.start(gw.serve)
        await gw.submit(Event("message", "dm", ROOM, chat="direct", principal=OWNER))
        await gw.submit(Event("message", "group", ROOM, session_key="main", chat="group", principal=OWNER))
        await wait_until(lambda: len(channel.sent) == 2)
        group.cancel_scope.cancel()

    assert channel.idle_after == ["room-1", "room-1"]  # the end of each turn is told, so typing can stop
    assert set(json.loads((tmp_path / "sessions" / "sessions.json").read_text())) == {"dm:alice", "im:group:room-1"}


async def test_only_direct_conversations_become_the_last_conversation(tmp_path: Path):
    last = LastTarget(tmp_path / "last_target.json")
    agent = Agent(Settings(tmp_path, (), ()), ScriptedProvider().say("a").say("b"), None, SessionStore(tmp_path / "s"))
    gw = Gateway(agent, {"im": prompting("x")}, ask_timeout_s=5, last_target=last)

    await gw.process(Event("message", "in private", Target("im", "dm-1", "alice"), chat="direct", principal=OWNER))
    await gw.process(Event("message", "in public", Target("im", "general", "alice"), chat="group", principal=OWNER))

    assert last.get() == Target("im", "dm-1", "alice")


async def test_the_channels_prompt_answers_a_question(tmp_path: Path):
    channel = prompting("tea")
    provider = ScriptedProvider().call(("q", "ask_user", {"question": "Tea?", "choices": ["tea", "coffee"]})).say("ok")

    reply = await gateway(tmp_path, provider, channel).process(Event("message", "drink?", ROOM, principal=OWNER))

    assert reply == "ok" and channel.prompts == ["Tea?"] and channel.texts == ["ok"]
    assert provider.seen[1]["messages"][-1].content == "tea"


async def test_a_typed_answer_wins_over_the_prompt_which_is_withdrawn(tmp_path: Path):
    channel = prompting(None)
    provider = ScriptedProvider().call(("q", "ask_user", {"question": "Name?"})).say("thanks").say("hi bob")
    gw = gateway(tmp_path, provider, channel)

    async with anyio.create_task_group() as group:
        await group.start(gw.serve)
        await gw.submit(Event("message", "register me", ROOM, principal=OWNER))
        await wait_until(lambda: channel.prompts)
        await gw.submit(Event("message", "bob is not asked", Target("im", "room-1", "bob")))
        await gw.submit(Event("message", "Alice", ROOM, principal=OWNER))
        await wait_until(lambda: "thanks" in channel.texts)
        group.cancel_scope.cancel()

    assert channel.withdrawn == 1
    assert provider.seen[1]["messages"][-1].content == "Alice"
