"""Telling every listener of both protocol eras that a server-event resource changed.

2026-era hosts hear it through the `subscriptions/listen` bus; older ones (desktop apps) through
`notifications/resources/updated` after they called `resources/subscribe`, which the SDK leaves to the server.

An older-era subscription belongs to the client's connection (its stdio pipe, or its streamable HTTP session): the
SDK builds a new `ServerSession` for every request, so only the `Connection` behind it says which client asked.
Keyed by that, subscribing twice is one subscription, `resources/unsubscribe` ends it, and a connection that closes
takes its subscription with it.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated, SubscriptionBus
from mcp.shared.exceptions import MCPError

from .arguments import quote
from .sdk_workarounds import lowlevel_server


class Notifier:
    """Tells listeners that `uri` changed; pass `bus` as the server's `subscriptions=`, then `install` adds the
    resources/subscribe handlers to that server."""

    def __init__(self, uri: str) -> None:
        self.bus: SubscriptionBus = InMemorySubscriptionBus()
        self.uri = uri
        self._subscribers: dict[Connection, None] = {}  # a dict: told in the order they subscribed

    def install(self, server: MCPServer[Any]) -> None:
        lowlevel = lowlevel_server(server)
        lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self._refuse_unknown("subscribe to", params.uri)
        connection = connection_of(ctx)
        if connection not in self._subscribers:
            self._subscribers[connection] = None
            self._forget_when_closed(connection)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self._refuse_unknown("unsubscribe from", params.uri)
        self._subscribers.pop(connection_of(ctx), None)
        return types.EmptyResult()

    def _refuse_unknown(self, verb: str, uri: str) -> None:
        """A subscription to a resource this server never announces would wait forever: say which one it has."""
        if uri != self.uri:
            raise MCPError(
                types.INVALID_PARAMS,
                f"cannot {verb} {quote(uri, 200)}: this server publishes updates of {self.uri} only",
            )

    def _forget_when_closed(self, connection: Connection) -> None:
        """Drop the connection's subscription when it closes, once however often it subscribed again."""
        key = f"hermitcrab/notifier/{self.uri}"
        if key not in connection.state:
            connection.state[key] = True
            connection.exit_stack.callback(self._subscribers.pop, connection, None)

    async def changed(self) -> None:
        await self.bus.publish(ResourceUpdated(uri=self.uri))
        for connection in list(self._subscribers):
            await connection.send_resource_updated(self.uri)  # never raises: a closed stream drops it


def connection_of(ctx: ServerRequestContext[Any]) -> Connection:
    """The client connection a request came on: the same object for every request of one stdio pipe or HTTP session.

    `ServerRequestContext` carries only the per-request `ServerSession`, which holds the connection privately.
    """
    return ctx.session._connection  # pyright: ignore[reportPrivateUsage]  # the SDK has no public seam for this
