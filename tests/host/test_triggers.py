"""Server events reach the gateway as turns carrying the changed resource."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.events import Event, Target
from hermitcrab.host.pool import McpPool, ServerEvent
from hermitcrab.host.triggers import relay_server_events

TEST_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")
MAIN = Target("test", "main")


async def test_a_published_item_becomes_a_server_event_turn():
    send, receive = anyio.create_memory_object_stream[ServerEvent](10)
    submitted: list[Event] = []
    arrived = anyio.Event()

    async def submit(event: Event) -> None:
        submitted.append(event)
        arrived.set()

    kit = ServerConfig("kit", command=sys.executable, args=(TEST_SERVER,))
    async with McpPool([kit], on_event=send.send) as pool, anyio.create_task_group() as group:
        group.start_soon(relay_server_events, receive, pool, submit, MAIN)
        await pool.call("publish", {"item": "water the plants"})
        with anyio.fail_after(5):
            await arrived.wait()
        group.cancel_scope.cancel()

    (event,) = submitted
    assert event.kind == "server" and event.target == MAIN
    assert event.text == "[event from kit: test://inbox]\nwater the plants"
    assert event.metadata == {"server": "kit", "uri": "test://inbox"}
