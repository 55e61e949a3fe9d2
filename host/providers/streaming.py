"""Reading a provider's server-sent events into one Completion, telling each piece of text as it arrives.

Each wire format brings an `Assembler` that understands its events; what is common lives here: the SSE framing, a
server that answered with a whole JSON body although asked to stream, and a stream that breaks off. Broken off
before the first word, nothing was shown, so it is a RetryableProviderError and failover may try the next profile;
after it, the words are on someone's screen, so it is a StreamCutError carrying what was said.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import httpx

from ..errors import ProviderError, RetryableProviderError, StreamCutError
from ._http import json_body
from .base import Completion, TextSink


class Assembler(Protocol):
    """Builds one message from a wire format's stream events."""

    @property
    def ended(self) -> bool:
        """Nothing more is to come (OpenAI's `[DONE]`, Anthropic's `message_stop`): stop reading."""
        ...

    @property
    def complete(self) -> bool:
        """The message is whole (the model said why it stopped), even if the stream's last event never came."""
        ...

    def feed(self, event: str, data: str) -> str:
        """Take one event; return the text it adds to the answer ("" for none). Raise ProviderError for an
        event that reports an error or cannot be read."""
        ...

    def completion(self) -> Completion: ...


async def read_stream(
    response: httpx.Response,
    assembler: Assembler,
    whole: Callable[[dict[str, Any]], Completion],
    on_delta: TextSink,
) -> Completion:
    """The Completion a streamed `response` carries; `whole` reads a server's JSON body when it did not stream."""
    if "text/event-stream" not in response.headers.get("content-type", ""):
        try:
            await response.aread()
        except httpx.TransportError as exc:
            raise RetryableProviderError(f"the answer broke off: {exc}") from exc
        completion = whole(json_body(response))
        if completion.message.content:
            on_delta(completion.message.content)
        return completion
    said: list[str] = []
    try:
        async for event, data in server_events(response):
            text = assembler.feed(event, data)
            if text:
                said.append(text)
                on_delta(text)
            if assembler.ended:
                break
    except (httpx.TransportError, ProviderError) as exc:
        raise _broken("".join(said), str(exc) or type(exc).__name__) from exc
    if not assembler.complete:
        raise _broken("".join(said), "it ended before the answer did")
    return assembler.completion()


def _broken(said: str, reason: str) -> Exception:
    if said:
        return StreamCutError(f"the model's stream broke off ({reason})", said=said)
    return RetryableProviderError(f"the model's stream broke off before its first word ({reason})")


async def server_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """(event name, data) per server-sent event; the name is "message" when the server gave none."""
    name, data = "message", list[str]()
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    if data:
        yield name, "\n".join(data)
