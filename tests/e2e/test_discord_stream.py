"""Streamed replies on Discord end to end: `hermitcrab run` with the real discord.py client against the fake Discord,
and the scripted LLM streaming its answer word by word."""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermitcrab.channels.discord.delivery import LIMIT
from hermitcrab.channels.split import split_message
from tests.support.cli import wait_for
from tests.support.discord_host import CONFIG, STREAMED, DiscordRun, start_run, stop
from tests.support.fake_discord import OWNER, FakeDiscord, Sent
from tests.support.fake_llm import FakeLLM, Reply, openai_text

WORD_S = 0.03
"""The scripted model's pause between words: 80 words take 2.4 s, long enough to see a draft edited twice."""


@pytest.fixture
def start(
    hermitcrab_home: Path, llm: FakeLLM, discord_api: FakeDiscord, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start `hermitcrab run` against the fake with `config`; each start logs to its own file."""
    runs: list[DiscordRun] = []

    def launch(config: str = CONFIG) -> subprocess.Popen[bytes]:
        (hermitcrab_home / "config.toml").write_text(config)
        runs.append(start_run(hermitcrab_home, llm, discord_api, tmp_path / f"run-{len(runs)}.log", env=STREAMED))
        return runs[-1].process

    yield launch
    for run in runs:
        run.kill()


def dm(discord_api: FakeDiscord) -> list[Sent]:
    return discord_api.in_channel(discord_api.dm_channel(OWNER))


def answered(discord_api: FakeDiscord, text: str) -> Callable[[], bool]:
    return lambda: [sent.content for sent in dm(discord_api)] == [text]


ANSWER = " ".join(f"word{n}" for n in range(80))


def test_the_draft_appears_before_the_model_finishes_is_edited_and_ends_as_the_answer_exactly_once(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    host = start()
    llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=WORD_S))
    asked = discord_api.user_says(OWNER, "count for me")

    wait_for(answered(discord_api, ANSWER), f"not answered once: {discord_api.sent}")
    assert stop(host) == 0
    (message,) = dm(discord_api)
    edits = discord_api.edits_of(message.id)
    assert message.reply_to == asked and llm.requests[0]["stream"] is True
    assert message.at < llm.streamed_at[-1]  # the draft was there while the model was still writing
    assert len(edits) >= 2 and all(ANSWER.startswith(edit.content) for edit in edits)
    assert edits[-1].content == ANSWER and discord_api.limited == 0 and discord_api.deleted == []
    assert all(b.at - a.at > 0.9 for a, b in itertools.pairwise(edits))  # at most once a second (0.1 s to spare)


def test_a_5000_character_streamed_answer_with_a_code_block_ends_as_three_messages_with_fences_intact(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    code = "\n".join(f"print('line {n:03}')  # {'-' * 50}" for n in range(59))
    text = "Here is the script:\n\n```python\n" + code + "\n```\n\n" + "That is all. " * 60
    host = start()
    llm.enqueue(Reply(openai_text(text), event_delay_s=0.004))
    discord_api.user_says(OWNER, "write me a script")

    wait_for(lambda: [sent.content for sent in dm(discord_api)] == split_message(text, LIMIT), f"{discord_api.sent}")
    stop(host)
    parts = [sent.content for sent in dm(discord_api)]
    assert 4900 < len(text) < 5100 and len(parts) == 3, parts
    assert all(len(part) <= 2000 and part.count("```") % 2 == 0 for part in parts)
    assert parts[1].startswith("```python\n") and "".join(parts).count("That is all.") == 60
    assert discord_api.limited == 0


def test_a_stream_cut_mid_way_leaves_one_message_with_what_was_said_and_a_notice(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    host = start()
    llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=WORD_S, cut_after=30))
    discord_api.user_says(OWNER, "count for me")

    wait_for(lambda: len(llm.streamed_at) == 30, "the stream did not get to its cut")
    stop(host)
    (message,) = dm(discord_api)
    said = ANSWER[: len(" ".join(ANSWER.split()[:29]))]
    assert message.content.startswith(said) and len(message.content) > len(said), message.content  # + a notice
    assert "word29" not in message.content and discord_api.deleted == []


def test_mode_off_sends_one_message_as_before(start, discord_api: FakeDiscord, llm: FakeLLM):
    host = start(CONFIG.replace("[discord]\n", '[discord]\nstream = "off"\n', 1))
    llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=0.005))
    discord_api.user_says(OWNER, "count for me")

    wait_for(answered(discord_api, ANSWER), f"not answered once: {discord_api.sent}")
    stop(host)
    assert discord_api.edits == [] and discord_api.deleted == []


def test_a_run_killed_mid_stream_replaces_its_draft_after_the_restart_never_a_second_answer(
    start, discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    first = start()
    llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=WORD_S, hold_after=20), openai_text("The whole answer."))
    discord_api.user_says(OWNER, "count for me")
    records = hermitcrab_home / "state" / "discord" / "drafts.json"
    wait_for(lambda: len(dm(discord_api)) == 1 and records.exists(), "no draft before the kill")
    draft = dm(discord_api)[0]
    assert draft.id in records.read_text()
    first.kill()
    first.wait(timeout=10)

    host = start()  # recovery: the turn was cut before the model answered, so it runs again into the same draft
    wait_for(answered(discord_api, "The whole answer."), f"not answered once: {discord_api.sent}")
    stop(host)
    (message,) = dm(discord_api)
    assert message.id == draft.id and discord_api.deleted == []
