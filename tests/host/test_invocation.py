"""`/<skill> args`, `/<server>:<prompt> args` and what the channel can show, through the real gateway and pool."""

from __future__ import annotations

import sys
from pathlib import Path

from hermitcrab.channels.terminal import TERMINAL, TerminalChannel
from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel
from tests.support.scripted_provider import ScriptedProvider

TEST_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")
ROOM = Target("test", "room", "alice")
PHONE = "a tiny test screen: 20 characters"
"""What the test IM channel says it can show, as Discord does."""


def make_settings(tmp_path: Path, *servers: ServerConfig) -> Settings:
    settings = Settings(home=tmp_path, providers=(), servers=servers, agent=AgentSettings())
    folder = settings.workspace / "skills" / "greet"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greet someone warmly.\n---\nWrite a two-line greeting for $ARGUMENTS.\n"
    )
    return settings


async def process(
    settings: Settings, provider: ScriptedProvider, pool: McpPool | None, event: Event
) -> RecordingChannel:
    channel = RecordingChannel(display=PHONE)
    agent = Agent(settings, provider, pool, SessionStore(settings.home / "sessions"))
    await Gateway(agent, {"test": channel}, ask_timeout_s=1).process(event)
    return channel


async def test_a_skill_command_runs_a_turn_on_the_skills_body_with_the_arguments(tmp_path: Path):
    settings = make_settings(tmp_path)
    provider = ScriptedProvider().say("Hello Bob!")

    channel = await process(settings, provider, None, Event("message", "/greet Bob", ROOM, principal=OWNER))

    message = provider.seen[0]["messages"][-1].content
    assert "Write a two-line greeting for Bob." in message and '"greet"' in message
    assert "- greet: Greet someone warmly." in provider.seen[0]["system"]
    assert "skill" in provider.seen[0]["tools"]
    assert channel.texts == ["Hello Bob!"]


async def test_an_unknown_slash_word_is_an_ordinary_message(tmp_path: Path):
    provider = ScriptedProvider().say("ok")

    await process(
        make_settings(tmp_path), provider, None, Event("message", "/usr/bin is a folder", ROOM, principal=OWNER)
    )

    assert provider.seen[0]["messages"][-1].content == "/usr/bin is a folder"


async def test_a_slash_word_naming_nothing_is_answered_without_a_model_call(tmp_path: Path):
    settings = make_settings(tmp_path)
    folder = settings.workspace / "skills" / "deploy"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Ship it.\nrequires: {env: [DEPLOY_TOKEN]}\n---\nDeploy.\n"
    )
    provider = ScriptedProvider()

    unknown = await process(settings, provider, None, Event("message", "/nosuchskill foo", ROOM, principal=OWNER))
    left_out = await process(settings, provider, None, Event("message", "/deploy now", ROOM, principal=OWNER))
    no_server = await process(settings, provider, None, Event("message", "/kit:greet", ROOM, principal=OWNER))

    assert unknown.texts == ["Unknown command /nosuchskill, see /help."]
    assert left_out.texts[0].startswith("The skill deploy is left out:") and "DEPLOY_TOKEN" in left_out.texts[0]
    assert no_server.texts == ["Unknown command /kit:greet, see /help."]
    assert provider.seen == []


async def test_a_server_prompt_runs_as_a_command_with_its_arguments(tmp_path: Path):
    kit = ServerConfig("kit", command=sys.executable, args=(TEST_SERVER,))
    settings = make_settings(tmp_path, kit)
    provider = ScriptedProvider().say("reviewed")

    async with McpPool(settings.servers) as pool:
        await process(
            settings, provider, pool, Event("message", "/kit:review app.py focus=style", ROOM, principal=OWNER)
        )
        missing = await process(settings, provider, pool, Event("message", "/kit:review", ROOM, principal=OWNER))
        listed = await process(settings, provider, pool, Event("message", "/skills", ROOM, principal=OWNER))

    assert provider.seen[0]["messages"][-1].content == "Review app.py, looking for style."
    assert len(provider.seen) == 1  # neither the usage error nor /skills called the model
    assert missing.texts == ["Missing path. Usage: /kit:review path=... [focus=...]"]
    assert "- greet: Greet someone warmly. [/greet]" in listed.texts[0]
    assert "- /kit:review path=... [focus=...]: Review a file" in listed.texts[0]


async def test_a_fork_skill_is_handed_to_the_spawn_server(tmp_path: Path):
    spawn = ServerConfig(
        "spawn",
        command=sys.executable,
        args=("-m", "hermitcrab.servers.spawn", "--state", str(tmp_path / "spawn"), "--agent", "true"),
    )
    settings = make_settings(tmp_path, spawn)
    folder = settings.workspace / "skills" / "research"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: research\ndescription: Dig.\ncontext: fork\n---\nDig into it.\n")
    provider = ScriptedProvider()

    async with McpPool(settings.servers) as pool:
        channel = await process(settings, provider, pool, Event("message", "/research tides", ROOM, principal=OWNER))

    assert provider.seen == []
    assert channel.texts[0].startswith("Started the skill research as a sub-agent (run ")


async def test_the_runtime_facts_say_what_the_channel_can_show(tmp_path: Path):
    settings = make_settings(tmp_path)
    provider = ScriptedProvider().say("a").say("b")
    agent = Agent(settings, provider, None, SessionStore(tmp_path / "sessions"))
    gateway = Gateway(agent, {"terminal": TerminalChannel(), "test": RecordingChannel(display=PHONE)}, ask_timeout_s=1)

    await gateway.process(Event("message", "hi", TERMINAL, principal=OWNER))
    await gateway.process(Event("message", "hi", ROOM, session_key="room", principal=OWNER))

    terminal, phone = (seen["messages"][-2].content for seen in provider.seen)  # the note before the message
    assert "it shows a terminal: long output" in terminal and "tiny test screen" not in terminal
    assert "it shows a tiny test screen: 20 characters" in phone


async def test_a_fork_skill_runs_in_the_conversation_when_no_spawn_server_is_there(tmp_path: Path):
    settings = make_settings(tmp_path)
    folder = settings.workspace / "skills" / "research"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: research\ndescription: Dig.\ncontext: fork\n---\nDig into it.\n")
    provider = ScriptedProvider().say("dug")

    channel = await process(settings, provider, None, Event("message", "/research tides", ROOM, principal=OWNER))

    assert "Dig into it.\n\nArguments: tides" in provider.seen[0]["messages"][-1].content
    assert channel.texts == ["dug"]
