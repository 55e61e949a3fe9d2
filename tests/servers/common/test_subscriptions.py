"""Older-era subscriptions (`resources/subscribe`) on the cron and spawn servers, over stdio and streamable HTTP.

One subscription per client connection and URI: subscribing twice is told once per update, unsubscribing ends it,
a URI the server does not publish is refused (-32602). 2026-era listeners (`subscriptions/listen`, the host's way)
are told as well.

"Nothing arrived" is a bounded wait, not a sleep: the server tells subscribers as soon as the update's item is stored,
so by the time the resource shows the item and a ping has been answered on the same connection, a notification that
was coming has come; the test then ends with a notification that must arrive, so the silence was not a dead server.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import INVALID_PARAMS, ResourceUpdatedNotification

from tests.support.fake_llm import free_port
from tests.support.processes import serving
from tests.support.spawn import FAKE_CLI

Transport = Literal["stdio", "http"]
TRANSPORTS: list[Transport] = ["stdio", "http"]


@dataclass(frozen=True)
class Target:
    """One of our servers with an event resource, and how a test makes it publish an update."""

    name: str
    uri: str
    flags: Callable[[Path], list[str]]
    make_item: Callable[[Client], Awaitable[object]]

    @property
    def module(self) -> str:
        return f"hermitcrab.servers.{self.name}"

    async def update(self, client: Client) -> None:
        """Make the server add an item, and return once the resource shows it (the server tells listeners then)."""
        before = len(await self.items(client))
        await self.make_item(client)
        with anyio.fail_after(20):
            while len(await self.items(client)) == before:
                await anyio.sleep(0.02)

    async def items(self, client: Client) -> list[Any]:
        contents = (await client.read_resource(self.uri)).contents
        return json.loads(contents[0].text)["items"]  # type: ignore[union-attr]  # a text resource


async def _wake(client: Client) -> object:
    return await client.call_tool("cron_wake", {"text": "an update"})


async def _spawn_echo(client: Client) -> object:
    return await client.call_tool("sessions_spawn", {"task": "an update", "runtime": "cli", "cli": "echo"})


TARGETS = [
    Target("cron", "cron://events", lambda tmp: ["--state", str(tmp / "cron")], _wake),
    Target(
        "spawn",
        "spawn://events",
        lambda tmp: ["--state", str(tmp / "spawn"), "--cli", f"echo={sys.executable} {FAKE_CLI} {{task}}"],
        _spawn_echo,
    ),
]
servers = pytest.mark.parametrize("target", TARGETS, ids=[target.name for target in TARGETS])
transports = pytest.mark.parametrize("transport", TRANSPORTS)


class Updates:
    """The `notifications/resources/updated` a client was sent, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    async def handle(self, message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self._arrived.set()

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(20):
            while len(self.uris) < count:
                await self._arrived.wait()
                self._arrived = anyio.Event()


@asynccontextmanager
async def connected(
    target: Target, transport: Transport, tmp_path: Path, updates: Updates | None = None
) -> AsyncIterator[Client]:
    """A client of `target` started as a process; an older-era (handshake) one when it counts `updates`."""
    command = [sys.executable, "-m", target.module, *target.flags(tmp_path)]
    options: dict[str, Any] = {"mode": "legacy", "message_handler": updates.handle} if updates else {}
    if transport == "stdio":
        async with Client(StdioServerParameters(command=command[0], args=command[1:]), **options) as client:
            yield client
        return
    port = free_port()
    with serving([*command, "--http", f"127.0.0.1:{port}"], port) as url:
        async with Client(url, **options) as client:
            yield client


async def subscribe(client: Client, uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # the older era is the point here
        await client.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]


async def unsubscribe(client: Client, uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.unsubscribe_resource(uri)  # pyright: ignore[reportDeprecated]


async def round_trip(client: Client) -> None:
    """A ping answered: whatever the server sent this client before answering has arrived."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.send_ping()  # pyright: ignore[reportDeprecated]


@servers
@transports
async def test_subscribing_twice_is_told_once_per_update(target: Target, transport: Transport, tmp_path: Path):
    updates = Updates()
    async with connected(target, transport, tmp_path, updates) as client:
        await subscribe(client, target.uri)
        await subscribe(client, target.uri)
        for told in (1, 2):
            await target.update(client)
            await updates.wait_for(told)
            await round_trip(client)
        assert updates.uris == [target.uri, target.uri]


@servers
@transports
async def test_after_unsubscribing_nothing_is_told(target: Target, transport: Transport, tmp_path: Path):
    updates = Updates()
    async with connected(target, transport, tmp_path, updates) as client:
        await subscribe(client, target.uri)
        await subscribe(client, target.uri)
        await unsubscribe(client, target.uri)  # once is enough: it was one subscription
        await target.update(client)
        await round_trip(client)
        assert updates.uris == []

        await subscribe(client, target.uri)  # the server still tells subscribers: the silence was the unsubscribe
        await target.update(client)
        await updates.wait_for(1)
        await round_trip(client)
        assert updates.uris == [target.uri]


@servers
@transports
async def test_a_uri_the_server_does_not_publish_is_refused(target: Target, transport: Transport, tmp_path: Path):
    async with connected(target, transport, tmp_path, Updates()) as client:
        with pytest.raises(MCPError) as subscribing:
            await subscribe(client, "file:///etc/passwd")
        with pytest.raises(MCPError) as unsubscribing:
            await unsubscribe(client, f"{target.uri}/other")
        await subscribe(client, target.uri)  # the connection is fine

    assert subscribing.value.code == INVALID_PARAMS and unsubscribing.value.code == INVALID_PARAMS
    assert subscribing.value.message == (
        f"cannot subscribe to 'file:///etc/passwd': this server publishes updates of {target.uri} only"
    )
    assert target.uri in unsubscribing.value.message


@servers
@transports
async def test_a_host_that_listens_is_told(target: Target, transport: Transport, tmp_path: Path):
    async with (
        connected(target, transport, tmp_path) as client,
        client.listen(resource_subscriptions=[target.uri]) as subscription,
    ):
        await target.update(client)
        with anyio.fail_after(20):
            event = await anext(aiter(subscription))
    assert getattr(event, "uri", None) == target.uri


@servers
async def test_a_subscriber_that_went_away_leaves_the_others_told(target: Target, tmp_path: Path):
    """Over HTTP one server has many connections; one that ended takes its subscription with it."""
    port = free_port()
    command = [sys.executable, "-m", target.module, *target.flags(tmp_path), "--http", f"127.0.0.1:{port}"]
    gone, staying = Updates(), Updates()
    with serving(command, port) as url:
        async with Client(url, mode="legacy", message_handler=gone.handle) as client:
            await subscribe(client, target.uri)
        async with Client(url, mode="legacy", message_handler=staying.handle) as client:
            await subscribe(client, target.uri)
            await target.update(client)
            await staying.wait_for(1)
            await round_trip(client)
    assert staying.uris == [target.uri] and gone.uris == []
