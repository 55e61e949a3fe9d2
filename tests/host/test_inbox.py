"""The inbox: a channel's message is recorded before its turn, answered once, and never run twice."""

from __future__ import annotations

from pathlib import Path

import anyio

from hermitcrab.host.config import AgentSettings, Settings
from hermitcrab.host.events import OWNER, Event, Target, person
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.recovery import RESTARTED, recover
from hermitcrab.host.inbox.log import Inbox
from hermitcrab.host.inbox.retries import Retries
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel
from tests.support.scripted_provider import ScriptedProvider

DM = Target("test", "dm-1", "sam", reply_to="m-1")


def message(text: str, inbound: str) -> Event:
    return Event("message", text, DM, chat="direct", principal=OWNER, inbound_id=inbound)


def test_an_accepted_message_survives_a_reopen_until_it_ends_and_a_replay_is_refused(tmp_path: Path):
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    friend = person("peer", "test", "ann", "Ann")
    event = Event("message", "hi", DM, chat="direct", principal=friend, inbound_id="test:1", metadata={"n": 1})

    assert inbox.accept(event) and not inbox.accept(event)
    reopened = Inbox(path)
    assert reopened.left_over == [event]  # everything but the callback, principal and reply_to included
    reopened.end("test:1")
    again = Inbox(path)

    assert again.pending() == [] and not again.accept(event)  # ended ids are remembered across restarts
    assert path.stat().st_mode & 0o077 == 0


def test_a_torn_last_line_is_skipped_and_the_log_stays_bounded(tmp_path: Path):
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path, remembered=3)
    for number in range(10):
        inbox.accept(message(f"m{number}", f"test:{number}"))
        inbox.end(f"test:{number}")
    inbox.accept(message("last", "test:last"))
    with path.open("a") as log:
        log.write('{"op": "accepted", "event": {"kind": "mess')

    reopened = Inbox(path, remembered=3)

    assert [e.text for e in reopened.left_over] == ["last"]
    assert len(path.read_text().splitlines()) == 4  # three ended ids and the one pending message
    assert reopened.accept(message("m0", "test:0"))  # forgotten after 3: the log does not grow without bound


async def test_a_message_answered_through_the_gateway_ends_and_a_duplicate_delivery_is_dropped(tmp_path: Path):
    provider = ScriptedProvider().say("Hello.").say("never")
    channel = RecordingChannel()
    inbox = Inbox(tmp_path / "inbox.jsonl")
    agent = Agent(Settings(tmp_path, (), ()), provider, None, SessionStore(tmp_path / "sessions"))
    gateway = Gateway(agent, {"test": channel}, ask_timeout_s=1, inbox=inbox)

    assert inbox.accept(message("hi", "test:m-1"))
    await gateway.process(message("hi", "test:m-1"))

    assert inbox.pending() == [] and not inbox.accept(message("hi", "test:m-1"))
    assert channel.sent == [(DM, "Hello.")] and len(provider.seen) == 1


async def test_a_message_whose_turn_took_the_host_down_three_times_is_set_aside_and_its_sender_told(tmp_path: Path):
    provider = ScriptedProvider().say("never")
    channel = RecordingChannel()
    inbox = Inbox(tmp_path / "inbox.jsonl")
    retries = Retries(tmp_path / "state", max_attempts=3)
    agent = Agent(Settings(tmp_path, (), (), agent=AgentSettings()), provider, None, SessionStore(tmp_path / "s"))
    gateway = Gateway(agent, {"test": channel}, ask_timeout_s=1, inbox=inbox, retries=retries)
    event = message("format the disk", "test:m-1")
    inbox.accept(event)
    for _ in range(3):
        retries.started("test:m-1")

    await gateway.process(event)

    assert provider.seen == []
    ((target, said),) = channel.sent
    assert target == DM and said.startswith("I could not answer “format the disk”: it failed 3 times")
    (letter,) = retries.letters.list()
    assert (letter.kind, letter.key, letter.session) == ("message", "test:m-1", "main")
    assert inbox.pending() == []


async def test_after_a_restart_each_cut_off_message_gets_one_answer_by_how_far_its_turn_got(tmp_path: Path):
    """Four messages a crash left: one never started, one whose turn another message's followed, one answered but
    not sent, one that ran a tool. Answers: two new turns, the recorded answer, and the restart notice."""
    store = SessionStore(tmp_path / "sessions")
    transcript = store.open("main").transcript
    transcript.append("user", text="cut off", inbound="test:2")
    transcript.append("user", text="next one", inbound="test:n")
    transcript.append("assistant", text="next answer")
    transcript.append("user", text="answered", inbound="test:3")
    transcript.append("assistant", text="the recorded answer")
    transcript.append("user", text="send the invoice", inbound="test:4")
    transcript.append("assistant", text="")
    transcript.append("tool_call", call_id="c1", name="echo", arguments={})
    inbox = Inbox(tmp_path / "inbox.jsonl")
    for number, text in [(1, "never started"), (2, "cut off"), (3, "answered"), (4, "send the invoice")]:
        inbox.accept(message(text, f"test:{number}"))
    provider = ScriptedProvider().say("first").say("second")
    channel = RecordingChannel()
    agent = Agent(Settings(tmp_path, (), ()), provider, None, store)
    gateway = Gateway(agent, {"test": channel}, ask_timeout_s=1, inbox=Inbox(tmp_path / "inbox.jsonl"))

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await recover(gateway)
        with anyio.fail_after(5):
            while gateway.pending("main"):
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()

    assert sorted(text for _, text in channel.sent) == sorted(
        ["first", "second", "the recorded answer", RESTARTED.format(what="send the invoice")]
    )
    assert [seen["messages"][-1].content for seen in provider.seen] == ["never started", "cut off"]
    assert gateway.inbox is not None and gateway.inbox.pending() == []
