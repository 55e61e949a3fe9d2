"""The webhook endpoint: only a caller with the token runs anything, and bad requests say what is wrong."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from hermitcrab.channels.webhook import MAX_BODY_BYTES, WebhookChannel
from hermitcrab.host.events import Event, MessageDone, Target, TextDelta, ToolFinished, ToolStarted, TurnDone
from hermitcrab.host.providers.base import Usage
from hermitcrab.host.turn.stream import TurnStream
from tests.support.fake_llm import free_port

TOKEN = "hook-secret-123"
LAST = Target("discord", "dm-42", "alice")


@pytest.fixture
async def hook() -> AsyncIterator[tuple[httpx.AsyncClient, list[Event], WebhookChannel]]:
    submitted: list[Event] = []

    async def submit(event: Event) -> None:
        submitted.append(event)

    channel = WebhookChannel(TOKEN, submit, lambda: LAST)
    port = free_port()
    async with anyio.create_task_group() as group:
        await group.start(channel.serve, "127.0.0.1", port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            yield client, submitted, channel
        channel.close()
        group.cancel_scope.cancel()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_an_agent_hook_queues_a_turn_delivered_to_the_last_conversation(hook):
    client, submitted, _ = hook

    response = await client.post("/hooks/agent", json={"message": "summarise the build log"}, headers=AUTH)

    assert response.status_code == 202 and response.json()["accepted"] is True
    (event,) = submitted
    assert (event.kind, event.text, event.target, event.deliver) == (
        "webhook",
        "[webhook]\nsummarise the build log",
        LAST,
        True,
    )
    assert event.session_key == f"hook-{response.json()['id']}"
    assert event.inbound_id == f"webhook:{response.json()['id']}"  # journalled by run: answered once across a crash


async def test_an_agent_hook_may_name_its_session_and_conversation(hook):
    client, submitted, _ = hook
    body = {"message": "hi", "session": "ci", "delivery": {"channel": "webhook", "to": "http://127.0.0.1:9/cb"}}

    assert (await client.post("/hooks/agent", json=body, headers=AUTH)).status_code == 202

    assert submitted[0].session_key == "ci" and submitted[0].target == Target("webhook", "http://127.0.0.1:9/cb")


async def test_wake_queues_a_system_event_without_owner_rights_outside_the_main_session(hook):
    client, submitted, _ = hook

    assert (await client.post("/hooks/wake", json={"text": "the backup finished"}, headers=AUTH)).status_code == 202

    assert submitted[0].session_key == "webhook" and submitted[0].text == "[system event]\nthe backup finished"
    assert submitted[0].principal.rights == "system" and submitted[0].principal.data


async def test_a_hook_without_owner_rights_may_not_use_the_main_session(hook):
    client, submitted, _ = hook

    response = await client.post("/hooks/agent", json={"message": "hi", "session": "main"}, headers=AUTH)

    assert response.status_code == 400 and "[webhook] owner = true" in response.json()["error"]
    assert submitted == []


async def test_hooks_configured_as_the_owner_wake_the_main_session_with_owner_rights():
    submitted: list[Event] = []

    async def submit(event: Event) -> None:
        submitted.append(event)

    channel = WebhookChannel(TOKEN, submit, lambda: LAST, owner=True)
    port = free_port()
    async with anyio.create_task_group() as group:
        await group.start(channel.serve, "127.0.0.1", port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            wake = await client.post("/hooks/wake", json={"text": "backup done"}, headers=AUTH)
            agent = await client.post("/hooks/agent", json={"message": "hi", "session": "main"}, headers=AUTH)
        channel.close()
        group.cancel_scope.cancel()

    assert (wake.status_code, agent.status_code) == (202, 202)
    assert [(e.session_key, e.principal.rights, e.principal.data) for e in submitted] == [
        ("main", "owner", False),
        ("main", "owner", False),
    ]


@pytest.mark.parametrize(
    ("headers", "body", "status", "says"),
    [
        ({}, b'{"message": "hi"}', 401, "bearer token"),
        ({"Authorization": "Bearer wrong"}, b'{"message": "hi"}', 401, "bearer token"),
        ({"Authorization": TOKEN}, b'{"message": "hi"}', 401, "Bearer <token>"),
        ({"Authorization": f"Basic {TOKEN}"}, b'{"message": "hi"}', 401, "bearer token"),
        (AUTH, b"{not json", 400, "not JSON"),
        (AUTH, b"[" * 60_000, 400, "recursion limit exceeded"),
        (AUTH, b'{"message": "hi", "delivery": ' + b"[" * 300 + b"]" * 300 + b"}", 400, "recursion limit exceeded"),
        (AUTH, b'{"message": "hi", "sesion": "x"}', 400, "sesion: Extra inputs are not permitted"),
        (AUTH, b'{"message": ""}', 400, "message"),
        (AUTH, b'{"message": "' + b"x" * MAX_BODY_BYTES + b'"}', 413, "64 KB"),
    ],
)
async def test_bad_requests_are_refused_and_nothing_runs(hook, headers, body, status, says):
    client, submitted, _ = hook

    response = await client.post("/hooks/agent", content=body, headers={**headers, "Content-Type": "application/json"})

    assert response.status_code == status and says in response.json()["error"]
    assert submitted == []


async def test_health_and_shutdown(hook):
    client, submitted, channel = hook

    assert (await client.get("/healthz")).json() == {"ok": True}
    channel.close()
    refused = await client.post("/hooks/wake", json={"text": "late"}, headers=AUTH)

    assert refused.status_code == 503 and submitted == []
    assert (await client.get("/healthz")).json() == {"ok": False}


async def test_a_delivery_target_no_channel_can_take_is_refused_naming_the_field():
    submitted: list[Event] = []

    async def submit(event: Event) -> None:
        submitted.append(event)

    def check(channel: str, to: str) -> str | None:
        return None if to.isdigit() else f"delivery.to: {to!r} is not a Discord channel id"

    channel = WebhookChannel(TOKEN, submit, lambda: LAST, check=check)
    port = free_port()
    body = {"message": "hi", "delivery": {"channel": "discord", "to": "general"}}
    async with anyio.create_task_group() as group:
        await group.start(channel.serve, "127.0.0.1", port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            response = await client.post("/hooks/agent", json=body, headers=AUTH)
        channel.close()
        group.cancel_scope.cancel()

    assert response.status_code == 400 and response.json() == {
        "error": "delivery.to: 'general' is not a Discord channel id"
    }
    assert submitted == []


def sse_messages(body: str) -> list[dict[str, object]]:
    """The JSON of each `data:` line of an event stream, checked against its `event:` line."""
    found: list[dict[str, object]] = []
    for block in body.strip().split("\n\n"):
        kind, data = block.split("\n")
        found.append(json.loads(data.removeprefix("data: ")))
        assert kind == f"event: {found[-1]['type']}"
    return found


async def test_a_streamed_hook_answers_with_its_turns_events_in_order_ending_with_turn_done(hook):
    client, submitted, channel = hook
    events = [TextDelta("Hel"), TextDelta("lo"), ToolStarted("c1", "exec", "ls"), ToolFinished("c1", "exec", True, 0.5)]

    async def run_the_turn() -> None:  # what the gateway does with the event the hook submitted
        while not submitted:
            await anyio.sleep(0.01)
        (event,) = submitted
        listener = channel.listener(event.target)
        assert listener is not None and channel.listener(Target("webhook", "https://example.com/hook")) is None
        async with TurnStream([listener]) as turn:
            for item in [*events, MessageDone("Hello", 0), TurnDone("Hello", Usage(3, 2))]:
                turn.emit(item)
        await channel.send(event.target, "Hello")

    async with anyio.create_task_group() as group:
        group.start_soon(run_the_turn)
        response = await client.post("/hooks/agent?stream=1", json={"message": "hi"}, headers=AUTH)

    assert response.headers["content-type"].startswith("text/event-stream")
    assert sse_messages(response.text) == [
        {"type": "text_delta", "text": "Hel"},
        {"type": "text_delta", "text": "lo"},
        {"type": "tool_started", "call_id": "c1", "name": "exec", "arguments": "ls"},
        {"type": "tool_finished", "call_id": "c1", "name": "exec", "ok": True, "duration_s": 0.5},
        {"type": "message_done", "text": "Hello", "tool_calls": 0},
        {
            "type": "turn_done",
            "reply": "Hello",
            "usage": {"input_tokens": 3, "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0},
        },
    ]
    assert submitted[0].inbound_id is None and submitted[0].session_key.startswith("hook-")


async def test_a_streamed_hook_whose_turn_fails_ends_with_what_failed(hook):
    client, submitted, channel = hook

    async def fail_the_turn() -> None:
        while not submitted:
            await anyio.sleep(0.01)
        listener = channel.listener(submitted[0].target)
        assert listener is not None
        await listener(TextDelta("Par"))
        await channel.send(submitted[0].target, "The model provider failed; try again in a minute.")

    async with anyio.create_task_group() as group:
        group.start_soon(fail_the_turn)
        response = await client.post("/hooks/agent?stream=1", json={"message": "hi"}, headers=AUTH)

    assert sse_messages(response.text) == [
        {"type": "text_delta", "text": "Par"},
        {"type": "failed", "text": "The model provider failed; try again in a minute."},
    ]


@pytest.mark.parametrize(
    ("query", "body", "says"),
    [
        ("stream=yes", {"message": "hi"}, "stream: 'yes' is neither 0 nor 1"),
        ("stream=1", {"message": "hi", "delivery": {"mode": "none"}}, "leave out delivery"),
    ],
)
async def test_a_streamed_hook_with_a_bad_flag_or_a_delivery_is_refused(hook, query, body, says):
    client, submitted, _ = hook

    response = await client.post(f"/hooks/agent?{query}", json=body, headers=AUTH)

    assert response.status_code == 400 and says in response.json()["error"] and submitted == []
