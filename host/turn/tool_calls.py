"""Running the tool calls of one model answer: concurrently, each guarded so one broken tool cannot end a turn."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import anyio

from ..mcp.pool import ToolOutcome
from ..providers.base import ToolCall, ToolSpec

logger = logging.getLogger(__name__)

Activity = Callable[[str, dict[str, Any]], None]


class Toolbox(Protocol):
    """Every tool the model may call this turn (MCP servers plus the host's own)."""

    def specs(self) -> list[ToolSpec]: ...

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome: ...


async def run_tools(toolbox: Toolbox, calls: Sequence[ToolCall], on_tool: Activity | None = None) -> list[ToolOutcome]:
    outcomes: list[ToolOutcome] = [ToolOutcome("", True)] * len(calls)

    async def run(index: int, call: ToolCall) -> None:
        outcomes[index] = await guarded_call(toolbox, call, on_tool)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run, index, call)
    return outcomes


async def guarded_call(toolbox: Toolbox, call: ToolCall, on_tool: Activity | None = None) -> ToolOutcome:
    if call.arguments_error:
        return ToolOutcome(f"could not call {call.name}: {call.arguments_error}", True)
    if on_tool is not None:
        on_tool(call.name, call.arguments)
    try:
        return await toolbox.call(call.name, call.arguments)
    except Exception as exc:  # per-tool-call guard: one broken tool must not end the turn
        logger.exception("tool %s raised", call.name)
        return ToolOutcome(f"{call.name} failed: {type(exc).__name__}: {exc}", True)
