"""The gateway: ask_user round trips through a channel, slash commands, per-session order."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hermitcrab.host.config import AgentSettings, Settings
from hermitcrab.host.errors import AllProvidersFailed, ContextOverflowError
from hermitcrab.host.events import OWNER, Event, Target, person
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel
from tests.support.fences import fenced
from tests.support.scripted_provider import ScriptedProvider

ROOM = Target("test", "room-1", "alice")


def agent(home: Path, provider: ScriptedProvider, **agent_settings: float) -> Agent:
    settings = Settings(home=home, providers=(), servers=(), agent=AgentSettings(**agent_settings))
    return Agent(settings, provider, None, SessionStore(home / "state" / "sessions"))


@pytest.fixture
def channel() -> RecordingChannel:
    return RecordingChannel()


async def test_ask_user_sends_the_question_and_returns_the_next_message(tmp_path: Path, channel: RecordingChannel):
    provider = (
        ScriptedProvider()
        .call(("q1", "ask_user", {"question": "Tea or coffee?", "choices": ["tea", "coffee"]}))
        .say("Tea it is.")
    )
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=5)

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await gateway.submit(Event("message", "order me a drink", ROOM, principal=OWNER))
        question = await channel.next_message()
        await gateway.submit(Event("message", "tea", ROOM, principal=OWNER))
        reply = await channel.next_message()
        group.cancel_scope.cancel()

    assert question.startswith("Tea or coffee?") and "- coffee" in question
    assert reply == "Tea it is."
    answer = provider.seen[1]["messages"][-1]
    assert (answer.tool_call_id, answer.content, answer.is_error) == ("q1", "tea", False)


async def test_ask_user_times_out_into_an_error_result(tmp_path: Path, channel: RecordingChannel):
    provider = ScriptedProvider().call(("q1", "ask_user", {"question": "Anyone there?"})).say("No answer.")
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=0.2)

    reply = await gateway.process(Event("message", "hello", ROOM, principal=OWNER))

    assert reply == "No answer."
    assert provider.seen[1]["messages"][-1].is_error


async def test_message_tool_sends_now(tmp_path: Path, channel: RecordingChannel):
    provider = ScriptedProvider().call(("m1", "message", {"text": "working on it"})).say("done")
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=1)

    await gateway.process(Event("message", "long job", ROOM, principal=OWNER))

    assert [text for _, text in channel.sent] == ["working on it", "done"]


async def test_commands_new_status_and_context(tmp_path: Path, channel: RecordingChannel):
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "SOUL.md").write_text("be kind")
    provider = ScriptedProvider().say("hi there")
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=1)

    await gateway.process(Event("message", "hello", ROOM, principal=OWNER))
    status = await gateway.process(Event("message", "/status", ROOM, principal=OWNER))
    context = await gateway.process(Event("message", "/context", ROOM, principal=OWNER))
    fresh = await gateway.process(Event("message", "/new", ROOM, principal=OWNER))

    assert "Model: scripted" in (status or "") and "Tokens used: 100 in / 10 out" in (status or "")
    assert "- SOUL.md: 7 chars" in (context or "") and "- AGENTS.md: missing" in (context or "")
    assert (fresh or "").startswith("Started a new session")
    assert gateway.agent.session("main").messages() == []


async def test_events_of_one_session_run_in_order(tmp_path: Path, channel: RecordingChannel):
    provider = ScriptedProvider().say("one").say("two").say("three")
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=1)

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        for text in ("a", "b", "c"):
            await gateway.submit(Event("message", text, ROOM, principal=OWNER))
        while len(channel.sent) < 3:
            await channel.next_message()
        group.cancel_scope.cancel()

    assert [text for _, text in channel.sent] == ["one", "two", "three"]
    assert [s["messages"][-1].content for s in provider.seen] == ["a", "b", "c"]


async def test_a_failed_turn_is_reported_and_the_session_goes_on(tmp_path: Path, channel: RecordingChannel):
    provider = ScriptedProvider().say("second works")
    provider.replies.insert(0, None)  # type: ignore[arg-type]  # makes the first turn crash inside the loop
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=1)

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await gateway.submit(Event("message", "first", ROOM, principal=OWNER))
        await gateway.submit(Event("message", "second", ROOM, principal=OWNER))
        while len(channel.sent) < 2:
            await channel.next_message()
        group.cancel_scope.cancel()

    assert channel.sent[0][1].startswith("Sorry, that turn failed because of an internal error (AttributeError)")
    assert channel.sent[1][1] == "second works"
    assert gateway.failures == 1


async def test_a_server_event_item_is_handled_once_even_if_delivered_twice(tmp_path: Path, channel: RecordingChannel):
    provider = ScriptedProvider().say("Reminder: stretch.")
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=1)
    item = Event("server", "[event from cron] stretch", ROOM, metadata={"event_id": "job-7:run-1"})

    first = await gateway.process(item)
    again = await gateway.process(item)

    assert first == "Reminder: stretch." and again is None
    assert len(provider.seen) == 1
    assert [text for _, text in channel.sent] == ["Reminder: stretch."]


async def test_host_tools_reject_bad_arguments_with_a_clear_error(tmp_path: Path, channel: RecordingChannel):
    provider = (
        ScriptedProvider()
        .call(("a", "ask_user", {"question": "  "}), ("m", "message", {}), ("x", "nonexistent", {}))
        .say("ok")
    )
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=1)

    await gateway.process(Event("message", "go", ROOM, principal=OWNER))

    results = {m.tool_call_id: m for m in provider.seen[1]["messages"] if m.role == "tool"}
    assert "non-empty 'question'" in results["a"].content and results["a"].is_error
    assert "non-empty 'text'" in results["m"].content and results["m"].is_error
    assert "unknown tool 'nonexistent'" in results["x"].content


async def test_message_to_an_unknown_channel_is_an_error_result(tmp_path: Path, channel: RecordingChannel):
    provider = ScriptedProvider().call(("m", "message", {"text": "hi", "channel": "carrier-pigeon"})).say("ok")
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=1)

    await gateway.process(Event("message", "go", ROOM, principal=OWNER))

    result = provider.seen[1]["messages"][-1]
    assert result.is_error and "no channel named 'carrier-pigeon'" in result.content


async def test_two_questions_in_one_response_are_shown_one_at_a_time_each_answered_by_its_own_reply(
    tmp_path: Path, channel: RecordingChannel
):
    provider = (
        ScriptedProvider()
        .call(("q1", "ask_user", {"question": "Which city?"}), ("q2", "ask_user", {"question": "Which day?"}))
        .say("Booked.")
    )
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=5)

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await gateway.submit(Event("message", "book a trip", ROOM, principal=OWNER))
        first = await channel.next_message()
        await anyio.sleep(0.05)  # the second question waits its turn instead of overwriting the first
        shown_before_answer = [text for _, text in channel.sent]
        await gateway.submit(Event("message", "Lisbon", ROOM, principal=OWNER))
        second = await channel.next_message()
        await gateway.submit(Event("message", "Friday", ROOM, principal=OWNER))
        assert await channel.next_message() == "Booked."
        group.cancel_scope.cancel()

    assert (first, second) == ("Which city?", "Which day?")
    assert shown_before_answer == ["Which city?"]
    answers = {m.tool_call_id: m.content for m in provider.seen[1]["messages"] if m.role == "tool"}
    assert answers == {"q1": "Lisbon", "q2": "Friday"}


async def test_only_the_user_who_was_asked_can_answer(tmp_path: Path, channel: RecordingChannel):
    provider = (
        ScriptedProvider().call(("q1", "ask_user", {"question": "Delete the old backups?"})).say("Deleted.").say("Hi")
    )
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=5)
    bob = Target("test", ROOM.conversation, "bob")
    member = person("group", "test", "bob")

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await gateway.submit(Event("message", "tidy up", ROOM, principal=OWNER))
        await channel.next_message()
        await gateway.submit(Event("message", "yes", bob, principal=member))
        assert gateway.waiting_for_answer(ROOM)
        await gateway.submit(Event("message", "no, keep them", ROOM, principal=OWNER))
        while len(channel.sent) < 3:
            await channel.next_message()
        group.cancel_scope.cancel()

    assert provider.seen[1]["messages"][-1].content == "no, keep them"
    # bob's message became a turn of its own, afterwards, and reached the model as his words, not the owner's
    assert fenced(provider.seen[2]["messages"][-1].content) == (
        "test user bob, a member of a group conversation, not the owner",
        "yes",
    )


async def slow_answer(question: str) -> str:
    """A channel's own prompt (like the CLI's stdin) that stays open a moment, then answers."""
    await anyio.sleep(0.05)
    return f"answer to {question}"


async def test_a_channels_own_prompt_is_never_open_twice_at_once(tmp_path: Path):
    provider = (
        ScriptedProvider()
        .call(("q1", "ask_user", {"question": "first?"}), ("q2", "ask_user", {"question": "second?"}))
        .say("ok")
    )
    channel = RecordingChannel(prompt=slow_answer)
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=5)

    await gateway.process(Event("message", "go", ROOM, principal=OWNER))

    assert channel.most_open == 1 and channel.prompts == ["first?", "second?"]
    answers = {m.tool_call_id: m.content for m in provider.seen[1]["messages"] if m.role == "tool"}
    assert answers == {"q1": "answer to first?", "q2": "answer to second?"}


class FailingProvider:
    label = "failing"

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def complete(self, *args: object) -> object:
        raise self.error


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (TimeoutError(), "took too long"),
        (AllProvidersFailed('every provider failed: openai: HTTP 400 {"error": "secret body"}'), "language model"),
        (ContextOverflowError("prompt is too long: 210000 tokens"), "/new"),
        (KeyError("tool_calls"), "internal error (KeyError)"),
    ],
)
async def test_a_failed_turn_tells_the_user_what_failed_without_internals(
    tmp_path: Path, channel: RecordingChannel, error: Exception, expected: str, caplog: pytest.LogCaptureFixture
):
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    failing = Agent(settings, FailingProvider(error), None, SessionStore(tmp_path / "sessions"))  # type: ignore[arg-type]
    gateway = Gateway(failing, {"test": channel}, ask_timeout_s=1)

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await gateway.submit(Event("message", "hi", ROOM, principal=OWNER))
        told = await channel.next_message()
        group.cancel_scope.cancel()

    assert expected in told and "Traceback" not in told and "secret body" not in told and "210000" not in told
    assert not told.endswith(": ") and len(told) > 40
    assert "Traceback (most recent call last)" in caplog.text  # the details stay in the log
