"""A streamed reply on Discord: the real channel and discord.py against the fake Discord, fed a turn's events
through a real TurnStream (the end-to-end tests in tests/e2e/test_discord_stream.py drive the same through `run`)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from discord.asset import Asset
from discord.gateway import DiscordWebSocket
from discord.http import Route

from hermitcrab.channels.delivery import DeliveryFailed
from hermitcrab.channels.discord import Access, DiscordChannel, point_at
from hermitcrab.channels.discord.delivery import LIMIT
from hermitcrab.channels.draft import StreamMode
from hermitcrab.channels.pairing import PairingStore
from hermitcrab.channels.split import split_message
from hermitcrab.host.events import (
    Event,
    MessageDone,
    Question,
    Target,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnDone,
    TurnEvent,
)
from hermitcrab.host.providers.base import Usage
from hermitcrab.host.turn.stream import TurnStream
from tests.support.fake_discord import GUILD_CHANNEL, OWNER, TOKEN, FakeDiscord, running_fake_discord

DM = str(int(OWNER) + 1_000_000)
ASKED = "123456789012345678"  # the id of the user's message the reply answers


@pytest.fixture
def fake() -> Iterator[FakeDiscord]:
    """The fake, with discord.py pointed at it for this test only (the addresses are module globals)."""
    saved = Route.BASE, Asset.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    with running_fake_discord() as discord_api:
        point_at(discord_api.api_base, discord_api.gateway_url)
        try:
            yield discord_api
        finally:
            Route.BASE, Asset.BASE, DiscordWebSocket.DEFAULT_GATEWAY = saved


async def _ignore(event: Event) -> None:
    return None


@asynccontextmanager
async def connected(fake: FakeDiscord, tmp_path: Path, **modes: StreamMode) -> AsyncIterator[DiscordChannel]:
    """A DiscordChannel logged in to the fake; its drafts recorded in `tmp_path` (a second one there is a restart)."""
    access = Access("pairing", (), {}, PairingStore(tmp_path / "pairing"), owners=(OWNER,))
    channel = DiscordChannel(
        TOKEN, access, _ignore, inbox=tmp_path / "inbox", max_text_bytes=1000, drafts=tmp_path / "drafts.json", **modes
    )
    async with anyio.create_task_group() as group:
        await group.start(channel.serve)
        with anyio.fail_after(20):
            await channel.wait_ready()
        yield channel
        group.cancel_scope.cancel()


async def until(condition: Callable[[], bool], what: str) -> None:
    with anyio.fail_after(20):
        while not condition():
            await anyio.sleep(0.02)
    assert condition(), what


async def stream(channel: DiscordChannel, target: Target, events: list[TurnEvent | float]) -> None:
    """Run the turn's events (a number is a pause in seconds) through a TurnStream with the channel's listener."""
    listener = channel.listener(target)
    assert listener is not None
    async with TurnStream([listener]) as turn:
        for event in events:
            if isinstance(event, float):
                await anyio.sleep(event)
            else:
                turn.emit(event)


def deltas(text: str, pieces: int, pause_s: float) -> list[TurnEvent | float]:
    size = -(-len(text) // pieces)
    out: list[TurnEvent | float] = []
    for start in range(0, len(text), size):
        out += [TextDelta(text[start : start + size]), pause_s]
    return out


def done(reply: str | None) -> TurnDone:
    return TurnDone(reply, Usage(10, 5))


async def test_a_draft_shows_the_first_words_at_once_is_edited_at_most_once_a_second_and_becomes_the_reply(
    fake: FakeDiscord, tmp_path: Path
):
    answer = " ".join(f"word{n}" for n in range(60))
    target = Target("discord", DM, OWNER, reply_to=ASKED)
    async with connected(fake, tmp_path) as channel:
        started = time.monotonic()
        await stream(channel, target, [*deltas(answer, 30, 0.1), MessageDone(answer, 0), done(answer)])
        await channel.send(target, answer)

    (message,) = fake.in_channel(DM)
    edits = fake.edits_of(message.id)
    assert message.content == answer and message.reply_to == ASKED
    assert message.at - started < 1.0  # the first words show within a second (the bound; here ~0.1 s)
    assert len(edits) >= 2 and edits[-1].content == answer
    assert all(answer.startswith(edit.content) for edit in edits)  # only ever the text so far
    gaps = [b.at - a.at for a, b in itertools.pairwise(edits)]
    assert min(gaps) > 0.9, gaps  # at most once a second (generous by 0.1 s for the fake's clock)
    assert fake.limited == 0 and not fake.deleted


async def test_a_long_streamed_answer_continues_in_new_messages_with_fences_intact(fake: FakeDiscord, tmp_path: Path):
    code = "\n".join(f"    print({n})  # a line of code" for n in range(120))
    answer = f"Here it is:\n\n```python\n{code}\n```\n\n" + "Words after the code. " * 60
    target = Target("discord", DM, OWNER, reply_to=ASKED)
    async with connected(fake, tmp_path) as channel:
        await stream(channel, target, [*deltas(answer, 10, 0.15), done(answer)])
        await channel.send(target, answer)

    contents = [sent.content for sent in fake.in_channel(DM)]
    assert len(answer) > 5000 and contents == split_message(answer, LIMIT) and len(contents) == 3
    assert all(part.count("```") % 2 == 0 for part in contents)
    assert fake.limited == 0


async def test_a_tool_call_shows_as_a_line_and_a_guild_channel_shows_no_half_written_text(
    fake: FakeDiscord, tmp_path: Path
):
    target = Target("discord", GUILD_CHANNEL, OWNER, reply_to=ASKED)
    events: list[TurnEvent | float] = [
        TextDelta("Let me look."),
        MessageDone("Let me look.", 1),
        ToolStarted("c1", "exec", '{"command": "ls `-la`"}'),
        0.3,
        ToolFinished("c1", "exec", True, 0.25),
        TextDelta("Two files."),
        done("Two files."),
    ]
    async with connected(fake, tmp_path) as channel:
        await stream(channel, target, events)
        shown = [edit.content for edit in fake.edits] + [sent.content for sent in fake.sent]
        await channel.send(target, "Two files.")

    (message,) = fake.in_channel(GUILD_CHANNEL)
    assert message.content == "Two files."
    assert any("⚙️ exec" in content and '`{"command": "ls \'-la\'"}`' in content for content in shown), shown
    assert not any("Let me look" in content for content in shown)  # progress mode: tool lines only


async def test_an_edit_that_fails_is_sent_anew_and_the_stale_draft_goes(fake: FakeDiscord, tmp_path: Path):
    target = Target("discord", DM, OWNER, reply_to=ASKED)
    async with connected(fake, tmp_path) as channel:
        await stream(channel, target, [TextDelta("The first words"), 0.2, done("The whole answer.")])
        await until(lambda: len(fake.in_channel(DM)) == 1, "no draft")
        fake.fail_edits(404)  # someone deleted the draft, or Discord refuses the edit
        await channel.send(target, "The whole answer.")

    (message,) = fake.in_channel(DM)
    assert message.content == "The whole answer." and message.reply_to == ASKED
    assert [sent.content for sent in fake.deleted] == ["The first words"]


async def test_a_silent_turn_takes_its_draft_down_and_a_question_moves_the_answer_below_it(
    fake: FakeDiscord, tmp_path: Path
):
    silent = Target("discord", DM, OWNER, reply_to=ASKED)
    asked = Target("discord", DM, OWNER, reply_to="223456789012345678")
    events: list[TurnEvent | float] = [TextDelta("Before the question"), 0.2, Question("Which one?"), 0.2]
    async with connected(fake, tmp_path) as channel:
        await stream(channel, silent, [TextDelta("NO_RE"), 0.2, done(None)])
        await stream(channel, asked, [*events, TextDelta("After"), 0.2, done("After the answer.")])
        await channel.send(asked, "After the answer.")

    assert [sent.content for sent in fake.deleted] == ["NO_RE", "Before the question"]
    assert [sent.content for sent in fake.in_channel(DM)] == ["After the answer."]


async def test_after_a_crash_the_recovered_answer_replaces_the_recorded_draft(fake: FakeDiscord, tmp_path: Path):
    target = Target("discord", DM, OWNER, reply_to=ASKED)
    async with connected(fake, tmp_path) as channel:
        listener = channel.listener(target)
        assert listener is not None
        await listener(TextDelta("Half an ans"))
        await until(lambda: len(fake.in_channel(DM)) == 1, "no draft")
    # the channel is gone mid-stream (a crash); the restarted host recovers the message and answers it
    async with connected(fake, tmp_path) as restarted:
        await restarted.send(target, "I restarted while working on “that”; ask again if you still need it.")

    (message,) = fake.in_channel(DM)
    assert message.content.startswith("I restarted") and not fake.deleted
    assert fake.edits_of(message.id) != []  # the draft itself became the answer
    (record,) = json.loads((tmp_path / "drafts.json").read_text()).values()
    assert record["messages"] == [message.id] and record["finished"]


async def test_a_reply_sent_again_after_a_crash_is_not_sent_twice_and_another_text_is_a_new_message(
    fake: FakeDiscord, tmp_path: Path
):
    target = Target("discord", DM, OWNER, reply_to=ASKED)
    async with connected(fake, tmp_path) as channel:
        await stream(channel, target, [TextDelta("The answer"), 0.1, done("The answer.")])
        await channel.send(target, "The answer.")
    # killed after the reply went out, before the inbox crossed the message off: recovery sends the answer again
    async with connected(fake, tmp_path) as restarted:
        await restarted.send(target, "The answer.")
        await restarted.send(target, "Something else went wrong.")

    assert [sent.content for sent in fake.in_channel(DM)] == ["The answer.", "Something else went wrong."]


async def test_mode_off_and_announcements_are_not_drafted(fake: FakeDiscord, tmp_path: Path):
    async with connected(fake, tmp_path, stream="off") as channel:
        assert channel.listener(Target("discord", DM, OWNER, reply_to=ASKED)) is None
    async with connected(fake, tmp_path) as channel:
        assert channel.listener(Target("discord", DM, OWNER)) is None  # a cron job's or heartbeat's delivery
        assert channel.listener(Target("discord", DM, OWNER, reply_to="interaction:1")) is None


async def test_a_reply_whose_draft_can_be_neither_edited_nor_sent_is_not_claimed_and_the_next_one_says_so(
    fake: FakeDiscord, tmp_path: Path
):
    target = Target("discord", DM, OWNER, reply_to=ASKED)
    async with connected(fake, tmp_path) as channel:
        await stream(channel, target, [TextDelta("The first words"), 0.2, done("The whole answer.")])
        await until(lambda: len(fake.in_channel(DM)) == 1, "no draft")
        fake.fail_edits(404)
        fake.fail_sends(403, 403, 403)  # every try of the send that stands in for the edit
        with pytest.raises(DeliveryFailed, match="missing permission"):
            await channel.send(target, "The whole answer.")
        await channel.send(Target("discord", DM, OWNER), "Next.")

    assert [sent.content for sent in fake.in_channel(DM)][-1].startswith(
        "(a reply could not be delivered here (missing permission"
    )
