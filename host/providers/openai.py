"""The OpenAI-compatible chat completions API (OpenAI, Ollama, vLLM, LM Studio, ...), whole or streamed."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError

from hermitcrab.util.text import without_lone_surrogates

from ..config import ProviderProfile
from ..errors import ProviderError
from ._http import HttpProvider
from .base import Completion, Message, TextSink, ToolCall, ToolSpec, Usage, cache_scope, register, tool_call
from .streaming import read_stream


class OpenAIProvider(HttpProvider):
    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion:
        payload: dict[str, Any] = {
            "model": self.profile.model,
            "messages": [{"role": "system", "content": system}, *to_wire(messages, takes_images(self.profile))],
            max_tokens_field(self.profile): self.profile.max_tokens,
        }
        if tools:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
        scope = cache_scope.get()
        if scope is not None and sends_cache_key(self.profile):
            payload["prompt_cache_key"] = hashlib.sha256(scope.encode()).hexdigest()[:32]  # not the session's name
        headers = {"Authorization": f"Bearer {self.profile.api_key}"} if self.profile.api_key else {}
        if on_delta is None or not self.profile.stream:
            return from_wire(await self._post("/chat/completions", payload, headers), self.label)
        payload |= {"stream": True, "stream_options": {"include_usage": True}}
        async with self._open_stream("/chat/completions", payload, headers) as response:
            return await read_stream(
                response, ChunkAssembler(self.label), lambda body: from_wire(body, self.label), on_delta
            )


def sends_cache_key(profile: ProviderProfile) -> bool:
    """Whether `prompt_cache_key` goes out: as the profile says, else only to OpenAI's own API, which takes it."""
    if profile.prompt_cache_key is not None:
        return profile.prompt_cache_key
    return urlsplit(profile.base_url).hostname == "api.openai.com"


def max_tokens_field(profile: ProviderProfile) -> str:
    """The field the answer's length limit goes in: as the profile says, else `max_completion_tokens` for OpenAI's
    own API (whose reasoning models refuse `max_tokens`) and `max_tokens` for the servers that copy its older API."""
    if profile.max_tokens_field is not None:
        return profile.max_tokens_field
    return "max_completion_tokens" if urlsplit(profile.base_url).hostname == "api.openai.com" else "max_tokens"


def takes_images(profile: ProviderProfile) -> bool:
    """Whether images go out as `image_url` parts: as the profile says, else only to OpenAI's own API, whose chat
    models all take them (a text-only model on another server would refuse the whole request)."""
    if profile.images is not None:
        return profile.images
    return urlsplit(profile.base_url).hostname == "api.openai.com"


def to_wire(messages: Sequence[Message], images: bool) -> list[dict[str, Any]]:
    """The chat completions messages; with `images`, a message's images go as `image_url` data URLs.

    A tool message can hold only text in this format, so the images of a run of tool results follow it in one user
    message, each headed by the call it came from (the way OpenAI's own agents show a tool's image): right after
    the results, since nothing may come between an assistant's tool calls and their results."""
    wire: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "tool" and shown:
            wire.append({"role": "user", "content": shown})
            shown = []
        wire.append(_message(message, images))
        if message.role == "tool" and images and message.images:
            shown.append({"type": "text", "text": f"The image(s) of tool call {message.tool_call_id}:"})
            shown.extend(_image_parts(message))
    if shown:
        wire.append({"role": "user", "content": shown})
    return wire


def _image_parts(message: Message) -> list[dict[str, Any]]:
    return [
        {"type": "image_url", "image_url": {"url": f"data:{i.media_type};base64,{base64.b64encode(i.data).decode()}"}}
        for i in message.images
    ]


def _message(message: Message, images: bool) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "user" and images and message.images:
        return {"role": "user", "content": [{"type": "text", "text": message.content}, *_image_parts(message)]}
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


class _PromptDetails(BaseModel):
    cached_tokens: int | None = 0


class _WireUsage(BaseModel):
    """`prompt_tokens` counts the whole prompt, the part served from the provider's cache included."""

    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    prompt_tokens_details: _PromptDetails | None = None

    def usage(self) -> Usage:
        cached = (self.prompt_tokens_details or _PromptDetails()).cached_tokens or 0
        return Usage(self.prompt_tokens or 0, self.completion_tokens or 0, cache_read_tokens=cached)


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
    return Completion(
        message=Message("assistant", message.content or "", tuple(_tool_call(raw) for raw in message.tool_calls or [])),
        usage=(response.usage or _WireUsage()).usage(),
        model=response.model,
        provider=label,
    )


class _ToolCallDelta(BaseModel):
    index: int | None = None
    id: str | None = None
    function: _Function = _Function()


class _Delta(BaseModel):
    content: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _ChunkChoice(BaseModel):
    delta: _Delta = _Delta()
    finish_reason: str | None = None


class _Chunk(BaseModel):
    model: str = ""
    choices: list[_ChunkChoice] = []
    usage: _WireUsage | None = None


class ChunkAssembler:
    """A chat completions stream: text deltas, tool calls whose arguments come in pieces (keyed by `index`), and a
    last chunk with the usage (asked for with `stream_options.include_usage`)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.model = ""
        self.text: list[str] = []
        self.calls: dict[int, _WireToolCall] = {}
        self.usage = _WireUsage()
        self.ended = False
        self.complete = False

    def feed(self, event: str, data: str) -> str:
        if data.strip() == "[DONE]":
            self.ended = True
            return ""
        try:
            body: object = without_lone_surrogates(json.loads(data))
        except json.JSONDecodeError as exc:
            raise ProviderError(f"a stream chunk that is not JSON: {data[:200]!r}") from exc
        if isinstance(body, dict) and "error" in body:
            raise ProviderError(f"the provider reported an error mid-stream: {data[:200]}")
        try:
            chunk = _Chunk.model_validate(body)
        except ValidationError as exc:
            raise ProviderError(f"unexpected chat completions chunk: {data[:200]}") from exc
        self.model = chunk.model or self.model
        self.usage = chunk.usage or self.usage
        added = ""
        for choice in chunk.choices[:1]:
            added = choice.delta.content or ""
            self.text.append(added)
            for position, piece in enumerate(choice.delta.tool_calls or []):
                self._add(position if piece.index is None else piece.index, piece)
            self.complete = self.complete or choice.finish_reason is not None
        return added

    def _add(self, index: int, piece: _ToolCallDelta) -> None:
        call = self.calls.setdefault(index, _WireToolCall(function=_Function(arguments="")))
        call.id = piece.id or call.id
        call.function.name = piece.function.name or call.function.name
        arguments = piece.function.arguments
        if isinstance(arguments, dict):  # a server that sends the whole object at once
            call.function.arguments = arguments
        elif arguments and isinstance(call.function.arguments, str):
            call.function.arguments += arguments

    def completion(self) -> Completion:
        calls = tuple(_tool_call(self.calls[index]) for index in sorted(self.calls))
        return Completion(
            message=Message("assistant", "".join(self.text), calls),
            usage=self.usage.usage(),
            model=self.model,
            provider=self.label,
        )


def _tool_call(raw: _WireToolCall) -> ToolCall:
    return tool_call(raw.id, raw.function.name, raw.function.arguments)


register("openai", OpenAIProvider)
