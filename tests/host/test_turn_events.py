"""A turn as a stream of events, through the gateway: what its listeners hear, in order, and a stream cut mid-answer."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from hermitcrab.host.config import AgentSettings, ProviderProfile, Settings
from hermitcrab.host.events import (
    OWNER,
    Compaction,
    Delivered,
    Event,
    Listener,
    MessageDone,
    Question,
    Target,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnDone,
    TurnEvent,
)
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.providers import FailoverProvider, Provider, create
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from hermitcrab.host.turn.loop import run_turn
from hermitcrab.host.turn.stream import TurnStream
from tests.support.channels import RecordingChannel
from tests.support.fake_llm import Reply, openai_text, running_fake_llm
from tests.support.scripted_provider import ScriptedProvider
from tests.support.toolboxes import Toolbox

ROOM = Target("test", "room-1", "alice")


def agent(home: Path, provider: Provider) -> Agent:
    settings = Settings(home=home, providers=(), servers=(), agent=AgentSettings())
    return Agent(settings, provider, None, SessionStore(home / "state" / "sessions"))


class StreamingChannel(RecordingChannel):
    """A channel that streams (`Streams`): it records every event of the turns answering it."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[TurnEvent] = []

    def listener(self, target: Target) -> Listener:
        return self._hear

    async def _hear(self, event: TurnEvent) -> None:
        self.events.append(event)


async def test_a_listener_hears_the_turn_in_order_from_the_tool_call_to_the_delivery(tmp_path: Path):
    provider = ScriptedProvider().call(("q1", "ask_user", {"question": "Tea or coffee?"})).say("Tea it is.")
    channel = heard = StreamingChannel()
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=5)

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await gateway.submit(Event("message", "order me a drink", ROOM, principal=OWNER))
        await channel.next_message()  # the question
        await gateway.submit(Event("message", "tea", ROOM, principal=OWNER))
        await channel.next_message()  # the reply
        while not any(isinstance(event, Delivered) for event in heard.events):
            await anyio.sleep(0.01)
        group.cancel_scope.cancel()

    finished = next(e for e in heard.events if isinstance(e, ToolFinished))
    assert finished.ok and finished.duration_s >= 0
    done = next(e for e in heard.events if isinstance(e, TurnDone))
    assert done.reply == "Tea it is." and done.usage.output_tokens == 20
    assert heard.events == [
        MessageDone("", 1),
        ToolStarted("q1", "ask_user", '{"question": "Tea or coffee?"}'),
        Question("Tea or coffee?"),
        finished,
        TextDelta("Tea"),
        TextDelta(" it"),
        TextDelta(" is."),
        MessageDone("Tea it is.", 0),
        done,
        Delivered("test", "room-1"),
    ]
    assert channel.texts[-1] == "Tea it is."


async def test_without_a_listener_the_provider_is_not_asked_to_stream(tmp_path: Path):
    with running_fake_llm() as llm:
        llm.enqueue(openai_text("Whole."))
        async with httpx.AsyncClient() as client:
            provider = create(ProviderProfile("openai", "fake-model", llm.url), client)
            reply = await Gateway(agent(tmp_path, provider), {"test": RecordingChannel()}, ask_timeout_s=5).process(
                Event("message", "hi", ROOM, principal=OWNER)
            )
    assert reply == "Whole." and "stream" not in llm.requests[0]


async def test_a_stream_cut_mid_answer_ends_the_turn_with_what_was_said_and_a_notice_said_once(tmp_path: Path):
    """The first profile's stream breaks after three words: the second profile is not asked (it would answer again),
    the reply is those words and a one-line notice, and the transcript records that one answer."""
    with running_fake_llm() as llm:
        llm.enqueue(Reply(openai_text("The tide comes in twice a day."), cut_after=4), openai_text("A second answer."))
        async with httpx.AsyncClient() as client:
            profiles = [ProviderProfile("openai", "fake-model", llm.url, name=name) for name in ("one", "two")]
            provider = FailoverProvider([create(profile, client) for profile in profiles])
            channel = heard = StreamingChannel()
            the_agent = agent(tmp_path, provider)
            gateway = Gateway(the_agent, {"test": channel}, ask_timeout_s=5)
            reply = await gateway.process(Event("message", "tides?", ROOM, principal=OWNER))

    assert reply is not None and reply.startswith("The tide comes\n\n(the model's stream broke off (")
    assert reply.endswith("; this answer is incomplete)") and reply.count("\n") == 2
    assert len(llm.requests) == 1 and llm.requests[0]["stream"] is True
    assert channel.texts == [reply]
    assert "".join(e.text for e in heard.events if isinstance(e, TextDelta)) == reply
    answers = [e for e in the_agent.session("main").transcript.view().live if e.get("kind") == "assistant"]
    assert [answer["text"] for answer in answers] == [reply]


async def test_a_compaction_mid_turn_is_told_with_the_sizes_before_and_after(tmp_path: Path):
    provider = ScriptedProvider(summary="- looked at many files", count_input=True)
    for index in range(14):
        provider.call((f"h{index}", "echo", {"text": f"file {index} " + "r" * 3_000}))
    provider.say("all read")
    heard: list[TurnEvent] = []

    async def hear(event: TurnEvent) -> None:
        heard.append(event)

    settings = AgentSettings(context_window_tokens=8_000, reserve_tokens=1_000, keep_recent_tokens=2_000)
    async with TurnStream([hear]) as stream:
        await run_turn(
            provider=provider,
            toolbox=Toolbox(),
            session=SessionStore(tmp_path).open("main"),
            system="SYSTEM",
            user_text="read every file",
            settings=settings,
            stream=stream,
        )

    compactions = [e for e in heard if isinstance(e, Compaction)]
    assert compactions and all(e.after_chars < e.before_chars for e in compactions)
    assert sum(isinstance(e, ToolFinished) and e.ok for e in heard) == 14


async def test_a_heartbeats_turn_is_not_streamed(tmp_path: Path):
    channel = StreamingChannel()
    provider = ScriptedProvider().say("Nothing needs attention. HEARTBEAT_OK")
    gateway = Gateway(agent(tmp_path, provider), {"test": channel}, ask_timeout_s=5)

    reply = await gateway.process(Event("heartbeat", "check", ROOM, principal=OWNER))

    assert reply == "Nothing needs attention. HEARTBEAT_OK" and channel.events == [] and channel.texts == []


async def test_a_silent_reply_streams_nothing_and_is_not_delivered(tmp_path: Path):
    channel = StreamingChannel()
    gateway = Gateway(agent(tmp_path, ScriptedProvider().say("NO_REPLY")), {"test": channel}, ask_timeout_s=5)

    assert await gateway.process(Event("message", "ok, thanks", ROOM, principal=OWNER)) is None
    assert not any(isinstance(event, TextDelta) for event in channel.events) and channel.texts == []
