"""Discord end to end: `hermitcrab run` with the real discord.py client against a fake Discord on 127.0.0.1, and the
scripted LLM behind it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli import CLI, wait_for
from tests.support.discord_host import CONFIG, DiscordRun, discord_env, first_reply, pairing, start_run, stop
from tests.support.fake_discord import (
    BOT_ID,
    BOT_ROLE,
    GUILD_CHANNEL,
    MODERATORS,
    OWNER,
    STRANGER,
    THREAD,
    TOKEN,
    FakeDiscord,
)
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls
from tests.support.fences import fenced

from .conftest import TEST_SERVER


@pytest.fixture
def start(
    hermitcrab_home: Path, llm: FakeLLM, discord_api: FakeDiscord, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start `hermitcrab run` with the Discord channel pointed at the fake (optionally with the test MCP server)."""
    (hermitcrab_home / "config.toml").write_text(CONFIG)
    runs: list[DiscordRun] = []

    def launch(*, servers: bool = False) -> subprocess.Popen[bytes]:
        desktop: Path | None = None
        if servers:
            desktop = tmp_path / "desktop.json"
            entry = {"command": sys.executable, "args": [str(TEST_SERVER), "--name", "kit"]}
            desktop.write_text(json.dumps({"mcpServers": {"kit": entry}}))
        runs.append(start_run(hermitcrab_home, llm, discord_api, tmp_path / "run.log", mcp_config=desktop))
        return runs[-1].process

    yield launch
    for run in runs:
        run.kill()


def user_texts(llm: FakeLLM) -> list[str]:
    return [request["messages"][-1]["content"] for request in llm.requests]


def test_an_unknown_dm_gets_only_a_pairing_code_and_approval_lets_the_user_in(
    start, discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    host = start()
    first = discord_api.user_says(STRANGER, "hello, who are you?")
    code_reply = first_reply(discord_api, first)
    code = re.search(r"\*\*([A-Z2-9]{8})\*\*", code_reply.content)
    assert code is not None and not set(code.group(1)) & set("01OI")
    assert llm.requests == []  # the agent never saw the stranger's message

    listed = pairing(hermitcrab_home, llm, "list")
    approved = pairing(hermitcrab_home, llm, "approve", code.group(1).lower())
    llm.enqueue(openai_text("Nice to meet you."))
    second = discord_api.user_says(STRANGER, "hello again")

    assert code.group(1) in listed.stdout and approved.returncode == 0, approved.stderr
    assert first_reply(discord_api, second).content == "Nice to meet you."
    assert stop(host) == 0  # SIGTERM with Discord connected: a clean exit
    assert len(discord_api.replies_to(first)) == len(discord_api.replies_to(second)) == 1
    (said,) = user_texts(llm)
    assert fenced(said) == (f"discord user {STRANGER} (user02), an approved friend, not the owner", "hello again")


def test_a_guild_message_needs_a_mention_and_its_channel_and_threads_get_their_own_sessions(
    start, discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    host = start()
    llm.enqueue(openai_text("Hello, reef!"), openai_text("Hello, thread!"))
    ignored = discord_api.user_says(OWNER, "anyone here?", guild=True)
    from_a_bot = discord_api.user_says(STRANGER, "beep", guild=True, mention=True, bot=True)
    mentioned = discord_api.user_says(OWNER, "what's up?", guild=True, mention=True)

    reply = first_reply(discord_api, mentioned)
    in_thread = discord_api.user_says(OWNER, "and here?", thread=True, mention=True)
    assert first_reply(discord_api, in_thread).channel_id == THREAD
    stop(host)
    assert discord_api.replies_to(mentioned) == [reply]
    assert (reply.channel_id, reply.content) == (GUILD_CHANNEL, "Hello, reef!")
    assert discord_api.replies_to(ignored) == discord_api.replies_to(from_a_bot) == []
    assert user_texts(llm) == ["what's up?", "and here?"]
    sessions = json.loads((hermitcrab_home / "state" / "sessions" / "sessions.json").read_text())
    assert set(sessions) == {f"discord:group:{GUILD_CHANNEL}", f"discord:thread:{THREAD}"}
    assert GUILD_CHANNEL in discord_api.typing


def test_mentioning_the_role_discord_made_for_the_bot_counts_as_a_mention_and_another_role_does_not(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    host = start()
    llm.enqueue(openai_text("At your service."))
    to_the_moderators = discord_api.user_says(OWNER, "mods, a look please", guild=True, role=MODERATORS)
    to_the_bots_role = discord_api.user_says(OWNER, "are you there?", guild=True, role=BOT_ROLE)

    reply = first_reply(discord_api, to_the_bots_role)
    stop(host)
    assert reply.content == "At your service."
    assert discord_api.replies_to(to_the_moderators) == []
    assert user_texts(llm) == ["are you there?"]  # the role's markup is stripped like a mention


def test_a_5000_character_reply_with_a_code_block_arrives_as_three_messages_with_fences_intact(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    code = "\n".join(f"print('line {n:03}')  # {'-' * 50}" for n in range(59))
    text = "Here is the script:\n\n```python\n" + code + "\n```\n\n" + "That is all. " * 60
    assert 4900 < len(text) < 5100
    host = start()
    llm.enqueue(openai_text(text))
    message = discord_api.user_says(OWNER, "write me a script")

    wait_for(lambda: len(discord_api.in_channel(discord_api.dm_channel(OWNER))) >= 3, f"not 3: {discord_api.sent}")
    stop(host)
    parts = [sent.content for sent in discord_api.in_channel(discord_api.dm_channel(OWNER))]
    assert len(parts) == 3 and all(len(part) <= 2000 for part in parts)
    assert [sent.reply_to for sent in discord_api.in_channel(discord_api.dm_channel(OWNER))] == [message, None, None]
    assert all(part.count("```") % 2 == 0 for part in parts)
    assert parts[1].startswith("```python\n")
    joined = "".join(parts)
    assert all(f"print('line {n:03}')" in joined for n in range(59))


def test_ten_quick_messages_get_ten_replies_in_order_none_doubled(start, discord_api: FakeDiscord, llm: FakeLLM):
    host = start()
    llm.enqueue(*(openai_text(f"answer {n}") for n in range(10)))
    messages = [discord_api.user_says(OWNER, f"question {n}") for n in range(10)]

    wait_for(lambda: len(discord_api.sent) >= 10, f"replies missing: {discord_api.sent}")
    stop(host)
    assert [(sent.reply_to, sent.content) for sent in discord_api.sent] == [
        (message, f"answer {n}") for n, message in enumerate(messages)
    ]
    assert user_texts(llm) == [f"question {n}" for n in range(10)]


def test_a_busy_session_keeps_its_order_while_another_session_answers_meanwhile(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    host = start()
    llm.enqueue(Reply(openai_text("slow first"), delay_s=1.5), openai_text("guild answer"), openai_text("second"))
    first = discord_api.user_says(OWNER, "one")
    wait_for(lambda: len(llm.requests) == 1, "the first turn did not start")
    second = discord_api.user_says(OWNER, "two")
    guild = discord_api.user_says(OWNER, "meanwhile", guild=True, mention=True)

    wait_for(lambda: len(discord_api.sent) >= 3, f"replies missing: {discord_api.sent}")
    stop(host)
    assert [(sent.reply_to, sent.content) for sent in discord_api.sent] == [
        (guild, "guild answer"),
        (first, "slow first"),
        (second, "second"),
    ]


def test_an_approval_button_pressed_by_someone_else_is_refused_and_the_owner_resumes_the_turn(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    host = start(servers=True)
    llm.enqueue(
        openai_tool_calls(("c1", "guarded", json.dumps({"action": "deploy"}))), openai_text("Deployed, as you allowed.")
    )
    message = discord_api.user_says(OWNER, "deploy it", guild=True, mention=True)
    wait_for(lambda: any(sent.components for sent in discord_api.sent), f"no buttons: {discord_api.sent}")
    question = next(sent for sent in discord_api.sent if sent.components)
    labels = [button["label"] for row in question.components for button in row["components"]]

    discord_api.press(question, "allow-once", STRANGER)
    wait_for(lambda: len(discord_api.callbacks) == 1, "the stranger's press got no answer")
    refusal = discord_api.callbacks[0]
    assert len(llm.requests) == 1  # still waiting for the owner
    discord_api.press(question, "allow-once", OWNER)

    reply = first_reply(discord_api, message)
    stop(host)
    assert discord_api.replies_to(message) == [reply]
    assert labels == ["allow-once", "allow-always", "deny"] and "Allow deploy?" in question.content
    assert refusal["type"] == 4 and refusal["data"]["flags"] == 64 and "Only the person" in refusal["data"]["content"]
    assert discord_api.callbacks[1]["type"] == 7 and question.components == []
    assert reply.content == "Deployed, as you allowed."
    assert "deploy: allow-once" in llm.requests[1]["messages"][-1]["content"]


def test_sends_answered_with_500_or_429_are_retried_and_one_that_keeps_failing_is_reported_not_claimed(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    host = start()
    llm.enqueue(openai_text("made it"), openai_text("this one is lost"))
    discord_api.fail_sends(500, 429)
    retried = discord_api.user_says(OWNER, "are you there?")
    assert first_reply(discord_api, retried).content == "made it"
    assert discord_api.requests.count(f"POST /api/v10/channels/{discord_api.dm_channel(OWNER)}/messages") == 3

    discord_api.fail_sends(403, 403, 403)
    lost = discord_api.user_says(OWNER, "and now?")
    wait_for(lambda: len(discord_api.sent) >= 2, f"nothing reported: {discord_api.sent}")
    stop(host)
    assert len(discord_api.sent) == 2
    report = discord_api.sent[1].content
    assert "could not be delivered here (missing permission" in report and "Sorry" in report
    assert all("this one is lost" not in sent.content for sent in discord_api.sent)
    assert discord_api.sent[1].reply_to == lost


def test_a_dropped_gateway_connection_resumes_and_loses_no_message(start, discord_api: FakeDiscord, llm: FakeLLM):
    start()
    llm.enqueue(openai_text("first answer"), openai_text("second answer"), openai_text("third answer"))
    first = discord_api.user_says(OWNER, "first")
    first_reply(discord_api, first)

    discord_api.drop()
    second = discord_api.user_says(OWNER, "second, while the connection is down")
    wait_for(lambda: discord_api.resumes == 1 and discord_api.connected, "no resume")
    discord_api.user_says(OWNER, "first", message_id=first)  # the same dispatch again: not answered twice
    third = discord_api.user_says(OWNER, "third")  # answered after anything queued before it

    assert first_reply(discord_api, second).content == "second answer"
    assert first_reply(discord_api, third).content == "third answer"
    assert len(discord_api.replies_to(first)) == len(discord_api.replies_to(second)) == 1
    assert discord_api.identifies == 1
    assert user_texts(llm) == ["first", "second, while the connection is down", "third"]


def test_commands_work_as_slash_commands_and_as_text_and_attachments_become_content(
    start, discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    host = start()
    assert {c["name"] for c in discord_api.commands} == {"new", "reset", "status", "compact"}
    discord_api.slash("status", OWNER)
    wait_for(lambda: any(sent.via == "followup" for sent in discord_api.sent), f"no follow-up: {discord_api.sent}")
    assert discord_api.callbacks[0]["type"] == 5  # deferred: "thinking…" until the answer comes
    assert discord_api.sent[0].content.startswith("Model: ")
    fresh = discord_api.user_says(OWNER, "/new")
    assert first_reply(discord_api, fresh).content.startswith("Started a new session")

    llm.enqueue(openai_text("NO_REPLY"))
    files = [("notes.txt", "text/plain", b"buy more shells"), ("crab.png", "image/png", b"\x89PNG fake")]
    quiet = discord_api.user_says(OWNER, "file these", attachments=files)
    wait_for(lambda: len(llm.requests) == 1, "the attachments never reached the model")
    stop(host)

    assert discord_api.replies_to(quiet) == []  # NO_REPLY: nothing is sent
    text = user_texts(llm)[0]
    assert "buy more shells" in text and "[attached file notes.txt]" in text
    saved = hermitcrab_home / "workspace" / "inbox" / "discord" / f"{quiet}-crab.png"
    assert str(saved) in text and saved.read_bytes() == b"\x89PNG fake"
    assert BOT_ID not in text


@pytest.mark.parametrize(
    ("token", "intent", "says"),
    [("wrong", True, "bot token"), (TOKEN, False, "connection: turn on the Message Content Intent")],
)
def test_a_refused_token_or_a_missing_intent_stops_run_with_one_line(
    discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path, token: str, intent: bool, says: str
):
    (hermitcrab_home / "config.toml").write_text(CONFIG)
    discord_api.message_content_intent = intent
    env = discord_env(hermitcrab_home, llm, discord_api, token=token)

    result = subprocess.run([*CLI, "run"], capture_output=True, text=True, env=env, timeout=60, check=False)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"error: Discord refused the {says}" in result.stderr and "wrong" not in result.stderr


def test_a_close_code_discord_py_gives_up_on_stops_run_with_one_line_instead_of_spinning(
    discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    (hermitcrab_home / "config.toml").write_text(CONFIG)
    discord_api.close_on_identify = 4013  # invalid intents: discord.py closes its client and will not reconnect
    env = discord_env(hermitcrab_home, llm, discord_api)

    result = subprocess.run([*CLI, "run"], capture_output=True, text=True, env=env, timeout=60, check=False)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "error: Discord refused the connection: invalid intents" in result.stderr
