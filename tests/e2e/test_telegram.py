"""Telegram end to end: one `hermitcrab run` (with the test MCP server) and the real python-telegram-bot client
against the fake Bot API on 127.0.0.1, the scripted LLM (told its model takes images) behind it. The tests share
the run: each talks in a chat of its own or waits for its own replies."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from hermitcrab.channels.split import split_message
from hermitcrab.channels.telegram.delivery import LIMIT
from tests.support.cli import wait_for
from tests.support.discord_host import DiscordRun, pairing
from tests.support.fake_llm import NO_PROVIDER_ENV, FakeLLM, Reply, openai_text, openai_tool_calls, running_fake_llm
from tests.support.fake_telegram import GROUP, OWNER, STRANGER, FakeTelegram, Sent, running_fake_telegram
from tests.support.telegram_host import CONFIG, start_telegram_run


@dataclass
class Bot:
    home: Path
    llm: FakeLLM
    telegram: FakeTelegram
    run: DiscordRun

    def reply(self, message_id: int, parts: int = 1) -> list[Sent]:
        wait_for(
            lambda: len(self.telegram.replies_to(message_id)) >= 1, f"no reply to {message_id}: {self.telegram.sent}"
        )
        first = self.telegram.replies_to(message_id)[0]
        wait_for(lambda: len(self.after(first)) >= parts, f"not {parts} parts: {self.telegram.sent}")
        return self.after(first)[:parts]

    def after(self, first: Sent) -> list[Sent]:
        """`first` and the bot's messages in its chat after it."""
        return [sent for sent in self.telegram.in_chat(first.chat_id) if sent.message_id >= first.message_id]

    def user_text(self, request: int) -> str:
        content = self.llm.requests[request]["messages"][-1]["content"]
        return content if isinstance(content, str) else content[0]["text"]


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bot]:
    home = tmp_path_factory.mktemp("telegram-home")
    with running_fake_llm() as llm, running_fake_telegram() as telegram:
        profile = (
            f'[[providers]]\nkind = "openai"\nmodel = "fake"\nbase_url = "{llm.url}"\napi_key = "k"\nimages = true\n'
        )
        (home / "config.toml").write_text(CONFIG + profile)
        run = start_telegram_run(home, llm, telegram, home / "run.log", servers=True, env=NO_PROVIDER_ENV)
        try:
            yield Bot(home, llm, telegram, run)
        finally:
            run.kill()


def test_an_unknown_dm_gets_only_a_pairing_code_and_after_approval_one_reply(bot: Bot):
    asked = len(bot.llm.requests)
    hello = bot.telegram.user_says(STRANGER, "hello?")
    (code_message,) = bot.reply(hello)
    code = re.search(r"code is ([A-Z2-9]{8})", code_message.text)
    assert code is not None and len(bot.llm.requests) == asked
    wait_for(lambda: any("asked to talk to me" in sent.text for sent in bot.telegram.in_chat(OWNER)), "owner not told")

    approved = pairing(bot.home, bot.llm, "approve", code.group(1))
    assert approved.returncode == 0, approved.stderr
    wait_for(lambda: any("approved" in sent.text for sent in bot.telegram.in_chat(STRANGER)), "approval not announced")
    bot.llm.enqueue(openai_text("Nice to meet you."))
    again = bot.telegram.user_says(STRANGER, "thanks")

    assert [sent.text for sent in bot.reply(again)] == ["Nice to meet you."]
    assert len(bot.llm.requests) == asked + 1 and "thanks" in bot.user_text(-1)
    assert "not the owner" in json.dumps(bot.llm.requests[-1]["messages"])  # a peer, not the owner


def test_a_group_message_without_a_mention_is_ignored_and_with_one_or_a_reply_to_the_bot_answered(bot: Bot):
    asked = len(bot.llm.requests)
    ignored = bot.telegram.user_says(OWNER, "just chatting", chat=GROUP)
    bot.llm.enqueue(openai_text("You called?"), openai_text("In the topic."))
    mentioned = bot.telegram.user_says(OWNER, "@hermit_test_bot are you there?", chat=GROUP)
    (answer,) = bot.reply(mentioned)
    in_topic = bot.telegram.user_says(OWNER, "and here?", chat=GROUP, topic=7, reply_to_bot=answer.message_id)

    (topic_answer,) = bot.reply(in_topic)
    assert answer.text == "You called?" and answer.chat_id == GROUP
    assert topic_answer.text == "In the topic." and topic_answer.topic == 7
    assert bot.telegram.replies_to(ignored) == [] and len(bot.llm.requests) == asked + 2
    assert bot.user_text(asked).endswith("are you there?") and "@hermit_test_bot" not in bot.user_text(asked)


def test_a_9000_character_reply_with_a_code_block_arrives_as_three_messages_intact(bot: Bot):
    code = "\n".join(f"print('line {n:03}')  # {'-' * 60}" for n in range(60))
    text = "Here is the script:\n\n```python\n" + code + "\n```\n\n" + "That is all. " * 310
    assert 8900 < len(text) < 9500
    bot.llm.enqueue(openai_text(text))
    asked = bot.telegram.user_says(OWNER, "write me a script")

    parts = bot.reply(asked, parts=3)
    assert len(split_message(text, LIMIT)) == 3 and all(len(part.text) <= LIMIT for part in parts)
    assert parts[0].body.count('<pre><code class="language-python">') == 1 and parts[0].body.endswith("</code></pre>")
    assert parts[1].body.startswith('<pre><code class="language-python">')
    assert "".join(part.text for part in parts).replace("\n", "") == text.replace("```python", "").replace(
        "```", ""
    ).replace("\n", "")


def test_markdown_special_characters_arrive_as_written(bot: Bot):
    text = "Specials: a_b_c 2 * 3 * 4 [x](y) ~ <tag> & &amp; (1) [2] snake_case *"
    bot.llm.enqueue(openai_text(text), openai_text("**bold**, _it_, `a<b`, [site](https://example.org/?a=1&b=2)"))
    first = bot.telegram.user_says(OWNER, "specials please")
    (plain,) = bot.reply(first)
    second = bot.telegram.user_says(OWNER, "styles please")
    (styled,) = bot.reply(second)

    assert plain.text == text
    assert (
        styled.body
        == '<b>bold</b>, <i>it</i>, <code>a&lt;b</code>, <a href="https://example.org/?a=1&amp;b=2">site</a>'
    )


def test_ten_quick_messages_get_ten_replies_in_order(bot: Bot):
    asked = len(bot.llm.requests)
    bot.llm.enqueue(*(openai_text(f"answer {n}") for n in range(10)))
    messages = [bot.telegram.user_says(OWNER, f"question {n}") for n in range(10)]

    wait_for(lambda: all(bot.telegram.replies_to(m) for m in messages), f"replies missing: {bot.telegram.sent}")
    replies = [bot.telegram.replies_to(m) for m in messages]
    assert [[sent.text for sent in reply] for reply in replies] == [[f"answer {n}"] for n in range(10)]
    assert [bot.user_text(asked + n).endswith(f"question {n}") for n in range(10)] == [True] * 10
    assert [reply[0].message_id for reply in replies] == sorted(reply[0].message_id for reply in replies)


def test_an_inline_keyboard_approval_pressed_by_someone_else_is_refused(bot: Bot):
    bot.llm.enqueue(openai_tool_calls(("c1", "guarded", json.dumps({"action": "deploy"}))), openai_text("Deployed."))
    asked = bot.telegram.user_says(OWNER, "@hermit_test_bot deploy it", chat=GROUP)
    wait_for(lambda: any(sent.keyboard for sent in bot.telegram.sent), f"no keyboard: {bot.telegram.sent}")
    question = next(sent for sent in bot.telegram.sent if sent.keyboard)
    labels = [button["text"] for row in question.keyboard for button in row]
    data = [button["callback_data"] for row in question.keyboard for button in row]
    answers = len(bot.telegram.answers)

    bot.telegram.press(question, "allow-once", STRANGER)
    wait_for(lambda: len(bot.telegram.answers) > answers, "the stranger's press got no answer")
    refusal = bot.telegram.answers[-1]
    bot.telegram.press(question, "allow-once", OWNER)

    (reply,) = bot.reply(asked)
    assert labels == ["allow-once", "allow-always", "deny"] and all(len(d.encode()) <= 64 for d in data)
    assert refusal["show_alert"] is True and "Only" in refusal["text"]
    assert reply.text == "Deployed." and question.keyboard == [] and "allow-once" in question.text
    assert "deploy: allow-once" in bot.llm.requests[-1]["messages"][-1]["content"]


def test_sends_answered_500_or_429_are_retried(bot: Bot):
    failed = bot.telegram.failed
    bot.telegram.fail_sends(500, 429)
    bot.llm.enqueue(openai_text("Got through."))
    asked = bot.telegram.user_says(OWNER, "are you reliable?")

    assert [sent.text for sent in bot.reply(asked)] == ["Got through."]
    assert bot.telegram.failed == failed + 2


def test_a_photo_reaches_the_model_as_an_image(bot: Bot, tmp_path: Path):
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (0, 160, 0)).save(buffer, "JPEG")
    bot.llm.enqueue(openai_text("A green photo."))
    asked = bot.telegram.user_says(OWNER, "what is this?", photo=buffer.getvalue())

    assert [sent.text for sent in bot.reply(asked)] == ["A green photo."]
    text, part = bot.llm.requests[-1]["messages"][-1]["content"]
    assert text["text"].startswith("what is this?\n\n[attached photo, saved at ")
    assert part["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_streaming_edits_a_draft_that_ends_as_the_answer(tmp_path: Path):
    answer = " ".join(f"word{n}" for n in range(60))
    with running_fake_llm() as llm, running_fake_telegram() as telegram:
        (tmp_path / "config.toml").write_text(CONFIG)
        stream = {"HERMITCRAB_TELEGRAM_STREAM": "partial"}
        run = start_telegram_run(tmp_path, llm, telegram, tmp_path / "run.log", env=stream)
        try:
            llm.enqueue(Reply(openai_text(answer), event_delay_s=0.04))
            asked = telegram.user_says(OWNER, "count for me")
            wait_for(
                lambda: [s.text for s in telegram.in_chat(OWNER)] == [answer], f"not answered once: {telegram.sent}"
            )
        finally:
            run.kill()
    (message,) = telegram.in_chat(OWNER)
    edits = [edit.text for edit in telegram.edits if edit.message_id == message.message_id]
    assert message.reply_to == asked and len(edits) >= 2 and edits[-1] == answer
    assert all(answer.startswith(edit) for edit in edits) and telegram.deleted == []


def test_a_reply_that_keeps_failing_is_reported_to_the_owner_not_claimed(bot: Bot):
    bot.telegram.fail_sends(500, 500, 500, 500)
    bot.llm.enqueue(openai_text("Lost in transit."))
    asked = bot.telegram.user_says(OWNER, "@hermit_test_bot status of the build?", chat=GROUP)

    wait_for(lambda: any("could not be delivered" in s.text for s in bot.telegram.in_chat(OWNER)), "owner not told")
    report = next(s.text for s in bot.telegram.in_chat(OWNER) if "could not be delivered" in s.text)
    assert report.startswith(f"A reply to Telegram chat {GROUP} could not be delivered: ") and "500" in report
    assert "Lost in transit." not in [sent.text for sent in bot.telegram.replies_to(asked)]


def test_a_text_document_becomes_content_and_a_voice_note_is_saved_with_its_path(bot: Bot):
    bot.llm.enqueue(openai_text("Read it."), openai_text("Heard it."))
    notes = bot.telegram.user_says(OWNER, "my notes", document=("notes.md", "text/markdown", b"# Plan\n- ship `it`"))
    assert [sent.text for sent in bot.reply(notes)] == ["Read it."]
    document_turn = bot.user_text(-1)
    voice = bot.telegram.user_says(OWNER, "", voice=b"OggS fake voice")
    assert [sent.text for sent in bot.reply(voice)] == ["Heard it."]

    assert document_turn.endswith("my notes\n\n[attached file notes.md]\n```\n# Plan\n- ship `it`\n```")
    saved = re.search(r"\[attached voice note \(3 s\), saved at (\S+)\]", bot.user_text(-1))
    assert saved is not None and Path(saved.group(1)).read_bytes() == b"OggS fake voice"
    assert Path(saved.group(1)).is_relative_to(bot.home / "workspace" / "inbox" / "telegram")
