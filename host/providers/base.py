"""The provider interface: neutral message types, the Provider protocol, a registry and failover."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol, cast

import httpx

from ..config import ProviderProfile
from ..errors import AllProvidersFailed, ConfigError, ContextOverflowError, ProviderError
from .images import Image

logger = logging.getLogger(__name__)

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    arguments_error: str | None = None


def tool_call(call_id: str, name: str, arguments: str | dict[str, Any] | None) -> ToolCall:
    """A tool call from the arguments the model wrote (JSON text, or already an object); bad ones are kept with the
    reason, so the model is told instead of the turn failing."""
    text = arguments or "{}"
    try:
        value: object = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, name, {}, f"arguments are not valid JSON: {exc}")
    if not isinstance(value, dict):
        return ToolCall(call_id, name, {}, "arguments must be a JSON object")
    return ToolCall(call_id, name, cast(dict[str, Any], value))


@dataclass(frozen=True)
class Message:
    """One entry of the conversation as every provider sees it, before wire translation."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    images: tuple[Image, ...] = ()
    """Shown beside `content` by a provider whose model takes images; `content` states each of them in text too
    (`images.Fitted.statement`), which is all a model without vision sees."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """What a model call cost, in the provider's own counts.

    `input_tokens` is the whole prompt, cached part included (as OpenAI counts it; Anthropic's `input_tokens` leaves
    out what was read from or written to its cache, so its provider adds those back): the context's size, and the
    sum the two cache counts are shares of. `cache_read_tokens` were served from the provider's prompt cache (billed
    at a fraction of the input price); `cache_write_tokens` were stored in it (Anthropic bills them above it).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def as_entry(self) -> dict[str, int]:
        """The transcript's `usage` field."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_entry(cls, entry: Mapping[str, object]) -> Usage:
        """A transcript's `usage` field read back; a count it lacks (written before caching was counted) is 0."""
        return cls(**{f.name: _count(entry.get(f.name)) for f in fields(cls)})


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


@dataclass(frozen=True)
class Completion:
    message: Message
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    provider: str = ""


cache_scope: ContextVar[str | None] = ContextVar("cache_scope", default=None)
"""The session the model calls made in this context belong to, set for a turn (`turn.agent`), so a provider that
routes calls by a cache key keeps one session's together. A context variable, not an argument: the Provider
interface, and every wrapper and fake of it, stays as it is for a hint only one provider uses."""

TextSink = Callable[[str], None]
"""Told each piece of the answer's text as the model streams it."""


class Provider(Protocol):
    """Anything that turns a system prompt, a conversation and tools into the model's next message.

    Given `on_delta`, a provider may stream and tell it each piece of text as it comes (the pieces add up to the
    message's text); a stream that breaks off after a piece was told raises StreamCutError.
    """

    label: str

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion: ...


ProviderFactory = Callable[[ProviderProfile, httpx.AsyncClient], Provider]
_registry: dict[str, ProviderFactory] = {}


def register(kind: str, factory: ProviderFactory) -> None:
    _registry[kind] = factory


def create(profile: ProviderProfile, client: httpx.AsyncClient) -> Provider:
    try:
        factory = _registry[profile.kind]
    except KeyError:
        raise ConfigError(f"no provider registered for kind {profile.kind!r}") from None
    return factory(profile, client)


class FailoverProvider:
    """Try each provider in order; the next one is used only when the previous one gave up."""

    def __init__(self, providers: Sequence[Provider]) -> None:
        if not providers:
            raise ConfigError("FailoverProvider needs at least one provider")
        self.providers = list(providers)
        self.label = self.providers[0].label

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion:
        """A StreamCutError passes through: part of the answer was shown, and the next profile would repeat it.

        A profile that failed before another answered is logged as a warning; when all fail, the error says it all,
        once (a warning before it would only repeat it)."""
        failures: list[str] = []
        for provider in self.providers:
            try:
                completion = await provider.complete(system, messages, tools, on_delta)
            except ContextOverflowError:
                raise  # another profile would overflow too; compaction is the cure
            except ProviderError as exc:
                failures.append(f"{provider.label}: {exc}")
                continue
            for failure in failures:
                logger.warning("provider %s failed, so %s answered", failure, provider.label)
            return completion
        if len(failures) == 1:
            raise AllProvidersFailed(f"the model provider {failures[0]}")
        raise AllProvidersFailed("every provider failed: " + "; ".join(failures))
