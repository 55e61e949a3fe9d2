"""The webhook endpoint: only a caller with the token runs anything, and bad requests say what is wrong."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from hermitcrab.channels.webhook import MAX_BODY_BYTES, WebhookChannel
from hermitcrab.host.events import Event, Target
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
