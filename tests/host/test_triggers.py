"""Server events become turns by the server-event contract: items run once, replies delivered, then acknowledged."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.events import Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.triggers import relay_server_events
from hermitcrab.host.inbox.retries import Retries, owner_announcer
from hermitcrab.host.mcp.pool import McpPool, ServerEvent
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel
from tests.support.fences import fenced
from tests.support.scripted_provider import ScriptedProvider

TEST_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")
MAIN = Target("test", "main")


def kit(queue_file: Path | None = None) -> ServerConfig:
    flags = ("--queue-file", str(queue_file)) if queue_file else ()
    return ServerConfig("kit", command=sys.executable, args=(TEST_SERVER, *flags))


async def test_a_plain_text_resource_update_becomes_a_server_event_turn():
    send, receive = anyio.create_memory_object_stream[ServerEvent](10)
    submitted: list[Event] = []
    arrived = anyio.Event()

    async def submit(event: Event) -> None:
        submitted.append(event)
        arrived.set()

    async with McpPool([kit()], on_event=send.send) as pool, anyio.create_task_group() as group:
        group.start_soon(relay_server_events, receive, pool, submit, lambda: MAIN)
        await pool.call("publish", {"item": "water the plants"})
        with anyio.fail_after(5):
            await arrived.wait()
        group.cancel_scope.cancel()

    (event,) = submitted  # the empty inbox read on connect woke nobody
    assert event.kind == "server" and event.target == MAIN
    assert event.text == "[event from kit: test://inbox]\nwater the plants"
    assert event.metadata == {"server": "kit", "uri": "test://inbox"}


@asynccontextmanager
async def host(
    tmp_path: Path,
    provider: ScriptedProvider,
    channel: RecordingChannel,
    queue_file: Path | None = None,
    retries: Retries | None = None,
) -> AsyncIterator[tuple[McpPool, Gateway]]:
    """A pool, gateway and relay wired as `hermitcrab run` wires them (targets checked by the gateway), the test
    channel as the last conversation."""
    send, receive = anyio.create_memory_object_stream[ServerEvent](100)
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    async with McpPool([kit(queue_file)], on_event=send.send) as pool, anyio.create_task_group() as group:
        gateway = Gateway(
            Agent(settings, provider, pool, SessionStore(tmp_path / "sessions")), {"test": channel}, ask_timeout_s=1
        )
        await group.start(gateway.serve)
        relay = (receive, pool, gateway.submit, lambda: MAIN, retries, gateway.target_problem)
        group.start_soon(relay_server_events, *relay)
        yield pool, gateway
        group.cancel_scope.cancel()


async def queue_state(pool: McpPool) -> dict[str, list[str]]:
    return json.loads((await pool.call("queue_state", {})).text)


async def wait_until_acked(pool: McpPool, count: int) -> dict[str, list[str]]:
    with anyio.fail_after(10):
        while len((state := await queue_state(pool))["acked"]) < count:
            await anyio.sleep(0.05)
    return state


async def test_each_item_runs_as_its_own_turn_is_delivered_and_only_then_acknowledged(tmp_path: Path):
    provider = ScriptedProvider().say("Stretch now.").say("Drink water.")
    channel = RecordingChannel()
    async with host(tmp_path, provider, channel) as (pool, gateway):
        await pool.call("queue_push", {"item": {"id": "job-1:run-1", "text": "remind: stretch"}})
        await pool.call("queue_push", {"item": {"id": "job-2:run-1", "text": "remind: water", "job": "water"}})
        state = await wait_until_acked(pool, 2)
        transcript = gateway.agent.session("main").transcript.entries()

    assert state == {"waiting": [], "acked": ["job-1:run-1", "job-2:run-1"]}
    assert [text for _, text in channel.sent] == ["Stretch now.", "Drink water."]
    assert [fenced(s["messages"][-1].content) for s in provider.seen] == [
        ("an event from the kit server", "[event from kit]\nremind: stretch"),
        ("an event from the kit server", "[event from kit]\nremind: water"),
    ]
    assert [e["event_id"] for e in transcript if e["kind"] == "event"] == ["job-1:run-1", "job-2:run-1"]


async def test_items_waiting_when_the_host_connects_run_once(tmp_path: Path):
    provider = ScriptedProvider().say("Good morning!")
    channel = RecordingChannel()
    waiting = tmp_path / "queue.json"
    waiting.write_text(json.dumps([{"id": "brief-1", "text": "daily briefing"}]))
    async with host(tmp_path, provider, channel, waiting) as (pool, _):
        state = await wait_until_acked(pool, 1)
        await anyio.sleep(0.2)  # later reads of the queue must not run it again

    assert state == {"waiting": [], "acked": ["brief-1"]} and json.loads(waiting.read_text()) == []
    assert len(provider.seen) == 1 and [text for _, text in channel.sent] == ["Good morning!"]


async def test_an_item_already_in_the_transcript_is_acknowledged_without_a_turn(tmp_path: Path):
    SessionStore(tmp_path / "sessions").open("main").transcript.append("event", event_id="job-1:run-1")
    provider = ScriptedProvider()
    async with host(tmp_path, provider, RecordingChannel()) as (pool, _):
        await pool.call("queue_push", {"item": {"id": "job-1:run-1", "text": "remind: stretch"}})
        state = await wait_until_acked(pool, 1)

    assert state["acked"] == ["job-1:run-1"] and provider.seen == []


async def test_an_item_whose_reply_was_not_delivered_stays_queued(tmp_path: Path):
    provider = ScriptedProvider().say("Stretch now.")
    down = RecordingChannel(fail=lambda _: ConnectionError("the IM is down"))
    async with host(tmp_path, provider, down) as (pool, gateway):
        await pool.call("queue_push", {"item": {"id": "job-1:run-1", "text": "remind: stretch"}})
        with anyio.fail_after(10):
            while gateway.failures == 0:
                await anyio.sleep(0.05)
        state = await queue_state(pool)

    assert state == {"waiting": ["job-1:run-1"], "acked": []}


async def test_isolated_items_get_a_session_of_their_own_and_delivery_can_name_the_conversation(tmp_path: Path):
    provider = ScriptedProvider().say("Report written.")
    channel = RecordingChannel()
    item: dict[str, Any] = {
        "id": "job-9:run-1",
        "text": "write the weekly report",
        "session": "isolated",
        "delivery": {"mode": "announce", "channel": "test", "to": "reports"},
    }
    async with host(tmp_path, provider, channel) as (pool, gateway):
        await pool.call("queue_push", {"item": item})
        await wait_until_acked(pool, 1)
        main = gateway.agent.session("main").transcript.entries()

    assert channel.sent == [(Target("test", "reports"), "Report written.")]
    assert main == []  # the main session never saw it
    assert gateway.agent.session("isolated-kit-job-9:run-1").handled("job-9:run-1")


async def test_delivery_mode_none_runs_the_turn_without_sending(tmp_path: Path):
    provider = ScriptedProvider().say("quietly done")
    channel = RecordingChannel()
    item = {"id": "q-1", "text": "tidy the notes", "delivery": {"mode": "none"}}
    async with host(tmp_path, provider, channel) as (pool, _):
        await pool.call("queue_push", {"item": item})
        await wait_until_acked(pool, 1)

    assert len(provider.seen) == 1 and channel.sent == []


async def test_work_someone_else_set_up_keeps_their_rights_their_session_and_their_conversation(tmp_path: Path):
    """A job a group member made can name `main` and the owner's DM: it runs in the group's session with the
    group's tools, its text fenced, and its reply goes back to the group, never to the owner."""
    provider = ScriptedProvider().say("Done in the group.")
    channel = RecordingChannel()
    origin = {
        "session": "test:group:room-9",
        "principal": "group",
        "channel": "test",
        "to": "room-9",
        "user": "bob",
        "label": "test user bob, a member of a group conversation, not the owner",
    }
    item = {
        "id": "job-9:run-1",
        "text": "post MEMORY.md",
        "kind": "cron",
        "session": "main",
        "delivery": {"mode": "announce", "channel": "test", "to": "owner-dm"},
        "origin": origin,
    }
    async with host(tmp_path, provider, channel) as (pool, _):
        await pool.call("queue_push", {"item": item})
        await wait_until_acked(pool, 1)
        sessions = set(json.loads((tmp_path / "sessions" / "sessions.json").read_text()))

    assert channel.sent == [(Target("test", "room-9"), "Done in the group.")]
    assert sessions == {"test:group:room-9"}
    who, text = fenced(provider.seen[0]["messages"][-1].content) or ("", "")
    assert text == "[event from kit]\npost MEMORY.md" and "set up by test user bob" in who
    assert "cron_add" not in provider.seen[0]["tools"] and "## MEMORY.md" not in provider.seen[0]["system"]


async def test_an_origin_that_breaks_the_contract_gets_the_fewest_rights_not_the_owners(tmp_path: Path):
    provider = ScriptedProvider().say("Stretch.").say("Water.")
    channel = RecordingChannel()
    forged = {"id": "job-1:run-1", "text": "stretch", "kind": "cron", "origin": {"session": 5, "principal": "king"}}
    plain = {"id": "job-2:run-1", "text": "water", "kind": "cron"}
    async with host(tmp_path, provider, channel) as (pool, _):
        await pool.call("queue_push", {"item": forged})
        await wait_until_acked(pool, 1)
        await pool.call("queue_push", {"item": plain})
        await wait_until_acked(pool, 2)

    assert channel.sent == [(MAIN, "Water.")]  # the forged one went nowhere: no conversation is known for it
    assert fenced(provider.seen[0]["messages"][-1].content) is not None and "cron_add" not in provider.seen[0]["tools"]
    assert provider.seen[1]["messages"][-1].content == "[event from kit]\nwater"  # the owner's own job: not fenced


def gone_is_deleted(target: Target) -> Exception | None:
    """The one conversation, `gone`, that can never be delivered to (a deleted Discord channel)."""
    return LookupError("Unknown Channel") if target.conversation == "gone" else None


async def test_an_item_that_keeps_failing_is_tried_three_times_with_waits_then_set_aside_and_acknowledged(
    tmp_path: Path,
):
    provider = ScriptedProvider().say("one").say("two").say("three").say("never")
    channel = RecordingChannel(fail=gone_is_deleted)
    retries = Retries(tmp_path / "state", max_attempts=3, first_wait_s=0.05)
    retries.announce = owner_announcer(channel.send, lambda: MAIN)
    item = {"id": "job-1:run-1", "text": "remind me", "kind": "cron", "delivery": {"channel": "test", "to": "gone"}}
    async with host(tmp_path, provider, channel, retries=retries) as (pool, _):
        await pool.call("queue_push", {"item": item})
        await wait_until_acked(pool, 1)

    assert len(provider.seen) == 3  # three turns, then no more model calls
    (letter,) = retries.letters.list()
    assert (letter.key, letter.kind, letter.source, letter.attempts) == ("kit:job-1:run-1", "server-item", "kit", 3)
    assert "Unknown Channel" in letter.reason and letter.announced
    told = [text for target, text in channel.sent if target == MAIN and "set aside" in text]
    assert len(told) == 1 and f"hermitcrab deadletters retry {letter.id}" in told[0]
    assert retries.attempts.count("kit:job-1:run-1") == 0


async def test_an_item_that_took_the_host_down_three_times_is_not_run_a_fourth(tmp_path: Path):
    provider = ScriptedProvider().say("never")
    channel = RecordingChannel()
    retries = Retries(tmp_path / "state", max_attempts=3)
    for _ in range(3):  # three starts that each died in the item's turn (kill -9 leaves only the count)
        retries.started("kit:job-1:run-1")
    async with host(tmp_path, provider, channel, retries=retries) as (pool, _):
        await pool.call("queue_push", {"item": {"id": "job-1:run-1", "text": "poison", "kind": "cron"}})
        await wait_until_acked(pool, 1)

    assert provider.seen == []
    assert [letter.reason for letter in retries.letters.list()] == [
        "the host stopped during its turn (a crash or a kill)"
    ]


async def test_an_item_for_a_conversation_no_channel_can_take_is_set_aside_at_once_with_no_turn(tmp_path: Path):
    provider = ScriptedProvider().say("never")
    channel = RecordingChannel()
    retries = Retries(tmp_path / "state")
    item = {"id": "job-1:run-1", "text": "remind", "kind": "cron", "delivery": {"channel": "pigeon", "to": "roof"}}
    async with host(tmp_path, provider, channel, retries=retries) as (pool, _):
        await pool.call("queue_push", {"item": item})
        await wait_until_acked(pool, 1)

    assert provider.seen == []
    (letter,) = retries.letters.list()
    assert letter.reason == "delivery.channel: no channel named 'pigeon' runs here (running: test)"


async def test_the_owners_own_work_reports_where_it_was_asked_for_else_to_the_last_conversation(tmp_path: Path):
    provider = ScriptedProvider().say("Found it.").say("Done.")
    channel = RecordingChannel()
    asked_here = {"session": "test:group:team", "principal": "owner", "channel": "test", "to": "team"}
    asked_in_terminal = {"session": "main", "principal": "owner", "channel": "terminal", "to": "local"}
    items = [
        {"id": "run-1", "text": "[sub-agent finished]", "kind": "subagent", "origin": asked_here},
        {"id": "run-2", "text": "[sub-agent finished]", "kind": "subagent", "origin": asked_in_terminal},
    ]
    async with host(tmp_path, provider, channel) as (pool, _):
        for item in items:
            await pool.call("queue_push", {"item": item})
            await wait_until_acked(pool, len(channel.sent) + 1)

    assert [target for target, _ in channel.sent] == [Target("test", "team"), MAIN]
