"""The Anthropic Messages API: tool_use and tool_result content blocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ProviderError
from ._http import HttpProvider
from .base import Completion, Message, ToolCall, ToolSpec, Usage, register

API_VERSION = "2023-06-01"


class AnthropicProvider(HttpProvider):
    async def complete(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Completion:
        payload: dict[str, Any] = {
            "model": self.profile.model,
            "system": system,
            "messages": to_wire(messages),
            "max_tokens": self.profile.max_tokens,
        }
        if tools:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
        headers = {"anthropic-version": API_VERSION}
        if self.profile.api_key:
            headers["x-api-key"] = self.profile.api_key
        return from_wire(await self._post("/v1/messages", payload, headers), self.label)


def to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Anthropic wants tool results as user-turn blocks, and consecutive same-role turns merged."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
                "is_error": message.is_error,
            }
        ]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks.extend({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls)
    return blocks


class _Block(BaseModel):
    type: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: dict[str, Any] = {}


class _WireUsage(BaseModel):
    input_tokens: int | None = 0
    output_tokens: int | None = 0


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
    usage = response.usage or _WireUsage()
    return Completion(
        message=Message("assistant", text, calls),
        usage=Usage(usage.input_tokens or 0, usage.output_tokens or 0),
        model=response.model,
        provider=label,
    )


register("anthropic", AnthropicProvider)
