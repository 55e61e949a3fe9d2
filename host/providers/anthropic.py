"""The Anthropic Messages API: tool_use and tool_result content blocks, whole or streamed."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ProviderError
from ._http import HttpProvider
from .base import Completion, Message, TextSink, ToolCall, ToolSpec, Usage, register, tool_call
from .images import Image
from .streaming import read_stream

API_VERSION = "2023-06-01"
CACHED = {"type": "ephemeral"}
"""A cache breakpoint: the prompt up to and including the block it marks is cached for the next calls."""


class AnthropicProvider(HttpProvider):
    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion:
        payload: dict[str, Any] = {
            "model": self.profile.model,
            "system": [{"type": "text", "text": system, "cache_control": CACHED}] if system else system,
            "messages": with_breakpoints(to_wire(messages, self.profile.images is not False)),
            "max_tokens": self.profile.max_tokens,
        }
        if tools:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
            payload["tools"][-1]["cache_control"] = CACHED
        headers = {"anthropic-version": API_VERSION}
        if self.profile.api_key:
            headers["x-api-key"] = self.profile.api_key
        if on_delta is None or not self.profile.stream:
            return from_wire(await self._post("/v1/messages", payload, headers), self.label)
        async with self._open_stream("/v1/messages", payload | {"stream": True}, headers) as response:
            return await read_stream(
                response, EventAssembler(self.label), lambda body: from_wire(body, self.label), on_delta
            )


def to_wire(messages: Sequence[Message], images: bool) -> list[dict[str, Any]]:
    """Anthropic wants tool results as user-turn blocks, and consecutive same-role turns merged; with `images`
    (every Claude model takes them, so unless the profile says `images = false`), a message's images go as
    base64 `image` blocks, inside the `tool_result` for a tool's."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message, images)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def with_breakpoints(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`wire` with cache breakpoints at the end of the newest message and of the one two before it (where the
    previous call ended: one answer and one user turn were added since), so the next call reads all history from the
    cache however many blocks a turn adds. With the tools' and the system prompt's, that is the API's limit of 4."""
    for message in wire[-1::-2][:2]:
        if message["content"]:
            message["content"][-1]["cache_control"] = CACHED
    return wire


def _blocks(message: Message, images: bool) -> list[dict[str, Any]]:
    shown = [_image(image) for image in message.images] if images else []
    if message.role == "tool":
        content: str | list[dict[str, Any]] = message.content
        if shown:
            content = [*([{"type": "text", "text": message.content}] if message.content else []), *shown]
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": content,
                "is_error": message.is_error,
            }
        ]
    text: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks = [*shown, *text]  # images before the text that asks about them, as Anthropic advises
    blocks.extend({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls)
    return blocks


def _image(image: Image) -> dict[str, Any]:
    data = base64.b64encode(image.data).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": data}}


class _Block(BaseModel):
    type: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: dict[str, Any] = {}


class _WireUsage(BaseModel):
    """Anthropic's counts: `input_tokens` is only the part of the prompt after the last cache breakpoint."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None

    def updated(self, later: _WireUsage) -> _WireUsage:
        """These counts with those `later` gives (a stream's `message_delta` may restate any of them)."""
        return self.model_copy(update=later.model_dump(exclude_none=True))

    def usage(self) -> Usage:
        read, written = self.cache_read_input_tokens or 0, self.cache_creation_input_tokens or 0
        return Usage((self.input_tokens or 0) + read + written, self.output_tokens or 0, read, written)


class _Response(BaseModel):
    model: str = ""
    content: list[_Block]
    usage: _WireUsage | None = None


def from_wire(body: dict[str, Any], label: str) -> Completion:
    try:
        response = _Response.model_validate(body)
    except ValidationError as exc:
        raise ProviderError(f"unexpected Messages API response: {str(body)[:200]}") from exc
    text = "".join(block.text for block in response.content if block.type == "text")
    calls = tuple(ToolCall(b.id, b.name, b.input) for b in response.content if b.type == "tool_use")
    return Completion(
        message=Message("assistant", text, calls),
        usage=(response.usage or _WireUsage()).usage(),
        model=response.model,
        provider=label,
    )


class _StreamBlock(BaseModel):
    type: str
    text: str = ""
    id: str = ""
    name: str = ""


class _BlockDelta(BaseModel):
    type: str
    text: str = ""
    partial_json: str = ""


class _StreamEvent(BaseModel):
    type: str
    index: int = 0
    message: _Response | None = None
    content_block: _StreamBlock | None = None
    delta: _BlockDelta | dict[str, Any] | None = None
    usage: _WireUsage | None = None
    error: dict[str, Any] | None = None


class EventAssembler:
    """A Messages API stream: `message_start` (model, input tokens), per content block a `content_block_start` then
    `content_block_delta`s (`text_delta`, or `input_json_delta` pieces of a tool call's input), `message_delta`
    (stop reason, output tokens, perhaps the other counts again) and `message_stop`."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.model = ""
        self.blocks: dict[int, _StreamBlock] = {}
        self.inputs: dict[int, list[str]] = {}
        self.usage = _WireUsage()
        self.ended = False
        self.complete = False

    def feed(self, event: str, data: str) -> str:
        try:
            item = _StreamEvent.model_validate_json(data)
        except ValidationError as exc:
            raise ProviderError(f"unexpected Messages API stream event: {data[:200]}") from exc
        if item.type == "error":
            raise ProviderError(f"the provider reported an error mid-stream: {str(item.error)[:200]}")
        if item.type == "message_start" and item.message is not None:
            self.model = item.message.model
            self.usage = item.message.usage or self.usage
        elif item.type == "content_block_start" and item.content_block is not None:
            self.blocks[item.index] = item.content_block
            self.inputs[item.index] = []
            return item.content_block.text
        elif item.type == "content_block_delta" and isinstance(item.delta, _BlockDelta):
            return self._add(item.index, item.delta)
        elif item.type == "message_delta":
            self.usage = self.usage.updated(item.usage or _WireUsage())
            self.complete = True
        elif item.type == "message_stop":
            self.ended = self.complete = True
        return ""

    def _add(self, index: int, delta: _BlockDelta) -> str:
        block = self.blocks.get(index)
        if block is None:
            raise ProviderError(f"a stream delta for content block {index}, which never started")
        if delta.type == "text_delta":
            block.text += delta.text
            return delta.text if block.type == "text" else ""
        if delta.type == "input_json_delta":
            self.inputs[index].append(delta.partial_json)
        return ""

    def completion(self) -> Completion:
        ordered = [self.blocks[index] for index in sorted(self.blocks)]
        calls = tuple(
            tool_call(b.id, b.name, "".join(self.inputs[i]) or None)
            for i, b in sorted(self.blocks.items())
            if b.type == "tool_use"
        )
        return Completion(
            message=Message("assistant", "".join(b.text for b in ordered if b.type == "text"), calls),
            usage=self.usage.usage(),
            model=self.model,
            provider=self.label,
        )


register("anthropic", AnthropicProvider)
