"""One agent turn: call the model, run the tools it asks for (concurrently), repeat until it answers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from .compaction import compact, estimate_tokens
from .config import AgentSettings
from .errors import ContextOverflowError
from .pool import ToolOutcome
from .providers.base import Message, Provider, ToolCall, ToolSpec, Usage
from .session import Session
from .text import cut_middle

logger = logging.getLogger(__name__)

SILENT_REPLIES = frozenset({"NO_REPLY"})


class Toolbox(Protocol):
    """Every tool the model may call this turn (MCP servers plus the host's own)."""

    def specs(self) -> list[ToolSpec]: ...

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome: ...


Activity = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class TurnResult:
    reply: str | None
    usage: Usage
    model_calls: int
    context_chars: int


async def run_turn(
    *,
    provider: Provider,
    toolbox: Toolbox,
    session: Session,
    system: str,
    user_text: str,
    settings: AgentSettings,
    on_tool: Activity | None = None,
) -> TurnResult:
    """Record the user's text, loop model <-> tools, and return the reply to deliver (None when silent)."""
    transcript = session.transcript
    transcript.append("user", text=user_text)
    messages = session.messages()
    specs = toolbox.specs()
    usage = Usage()
    reply = f"(stopped: the turn reached its limit of {settings.max_iterations} model calls)"
    calls = 0
    context_chars = 0
    while calls < settings.max_iterations:
        calls += 1
        if estimate_tokens(system, messages) > settings.context_window_tokens - settings.reserve_tokens:
            messages = await _compacted(session, provider, settings, messages)
        context_chars = len(system) + sum(len(m.content) for m in messages)
        try:
            completion = await provider.complete(system, messages, specs)
        except ContextOverflowError:
            messages = await _compacted(session, provider, settings, messages, required=True)
            completion = await provider.complete(system, messages, specs)
        usage = usage + completion.usage
        session.usage = session.usage + completion.usage
        answer = completion.message
        transcript.append(
            "assistant",
            text=answer.content,
            model=completion.model,
            provider=completion.provider,
            usage=completion.usage.as_entry(),
        )
        messages.append(answer)
        if not answer.tool_calls:
            reply = answer.content
            break
        for call in answer.tool_calls:
            transcript.append("tool_call", call_id=call.id, name=call.name, arguments=call.arguments)
        outcomes = await _run_tools(toolbox, answer.tool_calls, on_tool)
        for call, outcome in zip(answer.tool_calls, outcomes, strict=True):
            text = cut_middle(outcome.text, settings.max_tool_result_chars, "the tool result was too long")
            transcript.append("tool_result", call_id=call.id, name=call.name, text=text, is_error=outcome.is_error)
            messages.append(Message("tool", text, tool_call_id=call.id, is_error=outcome.is_error))
    silent = reply.strip() in SILENT_REPLIES
    return TurnResult(None if silent else reply, usage, calls, context_chars)


async def _compacted(
    session: Session, provider: Provider, settings: AgentSettings, messages: list[Message], *, required: bool = False
) -> list[Message]:
    """The session's messages after compaction; when nothing could be compacted, the same messages (or an error)."""
    if await compact(session, provider, settings.keep_recent_tokens):
        return session.messages()
    if required:
        raise ContextOverflowError("the current turn alone is longer than the model's context window")
    return messages


async def _run_tools(toolbox: Toolbox, calls: Sequence[ToolCall], on_tool: Activity | None) -> list[ToolOutcome]:
    outcomes: list[ToolOutcome] = [ToolOutcome("", True)] * len(calls)

    async def run(index: int, call: ToolCall) -> None:
        outcomes[index] = await _guarded_call(toolbox, call, on_tool)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run, index, call)
    return outcomes


async def _guarded_call(toolbox: Toolbox, call: ToolCall, on_tool: Activity | None) -> ToolOutcome:
    if call.arguments_error:
        return ToolOutcome(f"could not call {call.name}: {call.arguments_error}", True)
    if on_tool is not None:
        on_tool(call.name, call.arguments)
    try:
        return await toolbox.call(call.name, call.arguments)
    except Exception as exc:  # per-tool-call guard: one broken tool must not end the turn
        logger.exception("tool %s raised", call.name)
        return ToolOutcome(f"{call.name} failed: {type(exc).__name__}: {exc}", True)
