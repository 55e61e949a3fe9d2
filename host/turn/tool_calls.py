"""Running the tool calls of one model answer: concurrently, each guarded so one broken tool cannot end a turn,
each told to the turn's stream as it starts and finishes."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any, Protocol

import anyio

from ..events import ToolFinished, ToolStarted
from ..mcp.pool import ToolOutcome
from ..providers.base import ToolCall, ToolSpec
from ..text import shorten
from .stream import TurnStream

logger = logging.getLogger(__name__)

SHOWN_ARGUMENTS_CHARS = 100


class Toolbox(Protocol):
    """Every tool the model may call this turn (MCP servers plus the host's own)."""

    def specs(self) -> list[ToolSpec]: ...

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome: ...


async def run_tools(toolbox: Toolbox, calls: Sequence[ToolCall], stream: TurnStream) -> list[ToolOutcome]:
    outcomes: list[ToolOutcome] = [ToolOutcome("", True)] * len(calls)

    async def run(index: int, call: ToolCall) -> None:
        outcomes[index] = await timed_call(toolbox, call, stream)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run, index, call)
    return outcomes


async def timed_call(toolbox: Toolbox, call: ToolCall, stream: TurnStream) -> ToolOutcome:
    """`guarded_call` between a ToolStarted and a ToolFinished with its duration (a call with broken arguments,
    which never runs, is neither)."""
    if call.arguments_error:
        return await guarded_call(toolbox, call)
    stream.emit(ToolStarted(call.id, call.name, shown_arguments(call.arguments)))
    started = time.monotonic()
    outcome = await guarded_call(toolbox, call)
    stream.emit(ToolFinished(call.id, call.name, not outcome.is_error, time.monotonic() - started))
    return outcome


def shown_arguments(arguments: dict[str, Any]) -> str:
    """The arguments as one short line of JSON, for a progress line."""
    return shorten(json.dumps(arguments, ensure_ascii=False), SHOWN_ARGUMENTS_CHARS)


async def guarded_call(toolbox: Toolbox, call: ToolCall) -> ToolOutcome:
    if call.arguments_error:
        return ToolOutcome(f"could not call {call.name}: {call.arguments_error}", True)
    try:
        return await toolbox.call(call.name, call.arguments)
    except Exception as exc:  # per-tool-call guard: one broken tool must not end the turn
        logger.exception("tool %s raised", call.name)
        return ToolOutcome(f"{call.name} failed: {type(exc).__name__}: {exc}", True)
