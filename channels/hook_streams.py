"""A webhook call answered with its turn as it happens: `POST /hooks/agent?stream=1` gets `text/event-stream`.

Each of the turn's events is one SSE message, `event: <type>` and `data: <JSON>` (`{"type": "text_delta", "text":
...}`, `tool_started`, `tool_finished`, `message_done`, `question`, `compaction`, ..., in the order they happened),
and the stream ends with `turn_done` (`reply`, `usage`). A turn that fails ends it with `failed` (`text`: what
failed and what to try, as a chat channel would be told). The caller's connection is the reply's only destination,
so such a call is not recorded for a restart's recovery: a host that dies mid-turn drops the connection, and a stream
without `turn_done` tells the caller to try again. A caller that hangs up early stops nothing; the turn finishes and
stays in its session's transcript.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
from collections.abc import AsyncIterator

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from hermitcrab.host.events import Listener, Target, TurnDone, TurnEvent

PREFIX = "stream:"
"""A streamed call's conversation: `stream:<hook id>`, which names no callback URL."""


def wire(kind: str, data: dict[str, object]) -> bytes:
    """One SSE message whose JSON carries its own `type` too (a client may read either)."""
    body = json.dumps({"type": kind, **data}, ensure_ascii=False)
    return f"event: {kind}\ndata: {body}\n\n".encode()


def event_type(event: TurnEvent) -> str:
    """`TextDelta` → `text_delta`: the issue's names for the turn's events."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).lower()


class HookStreams:
    """The open event streams of streamed webhook calls, by conversation."""

    def __init__(self) -> None:
        self._open: dict[str, MemoryObjectSendStream[bytes]] = {}

    def open(self, hook_id: str) -> tuple[Target, AsyncIterator[bytes]]:
        """The target of a streamed call's turn, and the body of its response."""
        target = Target("webhook", PREFIX + hook_id)
        send, receive = anyio.create_memory_object_stream[bytes](max_buffer_size=math.inf)
        self._open[target.conversation] = send
        return target, self._body(target.conversation, receive)

    def owns(self, target: Target) -> bool:
        return target.conversation.startswith(PREFIX)

    def listener(self, target: Target) -> Listener | None:
        if target.conversation not in self._open:
            return None

        async def listen(event: TurnEvent) -> None:
            fields = dataclasses.asdict(event)
            self._put(target.conversation, wire(event_type(event), fields), last=isinstance(event, TurnDone))

        return listen

    def finish(self, target: Target, text: str) -> None:
        """The reply's delivery. After `turn_done` the stream is closed and holds the reply already; a turn that
        failed has not closed it, and `text` (what failed) ends it. A caller who hung up gets nothing."""
        self._put(target.conversation, wire("failed", {"text": text}), last=True)

    def _put(self, conversation: str, message: bytes, *, last: bool) -> None:
        send = self._open.get(conversation)
        if send is None:
            return
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # the caller hung up
            send.send_nowait(message)
        if last:
            send.close()
            del self._open[conversation]

    async def _body(self, conversation: str, receive: MemoryObjectReceiveStream[bytes]) -> AsyncIterator[bytes]:
        try:
            async with receive:
                async for message in receive:
                    yield message
        finally:
            self._open.pop(conversation, None)
