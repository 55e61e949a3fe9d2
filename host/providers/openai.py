"""The OpenAI-compatible chat completions API (OpenAI, Ollama, vLLM, LM Studio, ...)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from pydantic import BaseModel, Field, ValidationError

from ..errors import ProviderError
from ._http import HttpProvider
from .base import Completion, Message, ToolCall, ToolSpec, Usage, register


class OpenAIProvider(HttpProvider):
    async def complete(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Completion:
        payload: dict[str, Any] = {
            "model": self.profile.model,
            "messages": [{"role": "system", "content": system}, *(to_wire(m) for m in messages)],
            "max_tokens": self.profile.max_tokens,
        }
        if tools:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
        headers = {"Authorization": f"Bearer {self.profile.api_key}"} if self.profile.api_key else {}
        return from_wire(await self._post("/chat/completions", payload, headers), self.label)


def to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in message.tool_calls
        ]
    return wire


class _Function(BaseModel):
    name: str = ""
    arguments: str | dict[str, Any] | None = None


class _WireToolCall(BaseModel):
    id: str = ""
    function: _Function


class _WireMessage(BaseModel):
    content: str | None = None
    tool_calls: list[_WireToolCall] | None = None


class _Choice(BaseModel):
    message: _WireMessage


class _WireUsage(BaseModel):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0


class _Response(BaseModel):
    model: str = ""
    choices: list[_Choice] = Field(min_length=1)
    usage: _WireUsage | None = None


def from_wire(body: dict[str, Any], label: str) -> Completion:
    try:
        response = _Response.model_validate(body)
    except ValidationError as exc:
        raise ProviderError(f"unexpected chat completions response: {str(body)[:200]}") from exc
    message = response.choices[0].message
    usage = response.usage or _WireUsage()
    return Completion(
        message=Message("assistant", message.content or "", tuple(_tool_call(raw) for raw in message.tool_calls or [])),
        usage=Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0),
        model=response.model,
        provider=label,
    )


def _tool_call(raw: _WireToolCall) -> ToolCall:
    text = raw.function.arguments or "{}"
    try:
        arguments: object = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as exc:
        return ToolCall(raw.id, raw.function.name, {}, f"arguments are not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        return ToolCall(raw.id, raw.function.name, {}, "arguments must be a JSON object")
    return ToolCall(raw.id, raw.function.name, cast(dict[str, Any], arguments))


register("openai", OpenAIProvider)
