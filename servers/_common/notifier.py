"""Telling every listener of both protocol eras that a server-event resource changed.

2026-era hosts hear it through the `subscriptions/listen` bus; older ones (desktop apps) through
`notifications/resources/updated` after they called `resources/subscribe`, which the SDK leaves to the server.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated, SubscriptionBus


class Notifier:
    """Tells listeners that `uri` changed; pass `bus` as the server's `subscriptions=`, then `install` adds the
    resources/subscribe handlers to that server."""

    def __init__(self, uri: str) -> None:
        self.bus: SubscriptionBus = InMemorySubscriptionBus()
        self.uri = uri
        self._sessions: list[ServerSession] = []

    def install(self, server: MCPServer[Any]) -> None:
        lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]  # the SDK has no public seam for this
        lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if ctx.session not in self._sessions:
            self._sessions.append(ctx.session)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        if ctx.session in self._sessions:
            self._sessions.remove(ctx.session)
        return types.EmptyResult()

    async def changed(self) -> None:
        await self.bus.publish(ResourceUpdated(uri=self.uri))
        for session in list(self._sessions):
            try:
                await session.send_resource_updated(self.uri)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._sessions.remove(session)  # that host went away
