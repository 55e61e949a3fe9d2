"""Server events become turns: the changed resource is read and queued for the main session."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from anyio.abc import ObjectReceiveStream
from mcp.shared.exceptions import MCPError

from .events import Event, Target
from .pool import McpPool, ServerEvent

logger = logging.getLogger(__name__)

Submit = Callable[[Event], Awaitable[None]]


async def relay_server_events(
    events: ObjectReceiveStream[ServerEvent], pool: McpPool, submit: Submit, target: Target
) -> None:
    """Forward each event as a `server` Event with the resource's text; empty resources wake nobody."""
    async with events:
        async for event in events:
            try:
                text = await pool.handles[event.server].read_resource(event.uri)
            except (MCPError, TimeoutError) as exc:
                logger.warning("could not read %s from %s: %s", event.uri, event.server, exc)
                continue
            if not text.strip():
                continue
            metadata = {"server": event.server, "uri": event.uri}
            await submit(
                Event("server", f"[event from {event.server}: {event.uri}]\n{text}", target, metadata=metadata)
            )
