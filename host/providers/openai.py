"""The OpenAI-compatible chat completions API (OpenAI, Ollama, vLLM, LM Studio, ...)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from ..config import ProviderProfile
from ..errors import ProviderError
from ._http import post_json
from .base import Completion, Message, ToolCall, ToolSpec, Usage, register


class OpenAIProvider:
    def __init__(self, profile: ProviderProfile, client: httpx.AsyncClient) -> None:
        self.profile = profile
        self.client = client
        self.label = profile.label

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
        body = await post_json(
            self.client,
            f"{self.profile.base_url}/chat/completions",
            payload,
            headers=headers,
            timeout_s=self.profile.timeout_s,
            max_retries=self.profile.max_retries,
        )
        return from_wire(body, self.label)


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


def from_wire(body: dict[str, Any], label: str) -> Completion:
    try:
        choice = body["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ProviderError(f"response has no choices[0].message: {str(body)[:200]}") from exc
    calls = tuple(_tool_call(raw) for raw in choice.get("tool_calls") or [])
    usage = body.get("usage") or {}
    return Completion(
        message=Message(role="assistant", content=choice.get("content") or "", tool_calls=calls),
        usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
        model=str(body.get("model", "")),
        provider=label,
    )


def _tool_call(raw: dict[str, Any]) -> ToolCall:
    function = raw.get("function") or {}
    text = function.get("arguments") or "{}"
    try:
        arguments = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as exc:
        return ToolCall(raw.get("id", ""), function.get("name", ""), {}, f"arguments are not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        return ToolCall(raw.get("id", ""), function.get("name", ""), {}, "arguments must be a JSON object")
    return ToolCall(raw.get("id", ""), function.get("name", ""), arguments)


register("openai", OpenAIProvider)
