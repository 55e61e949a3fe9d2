"""A toolbox for turn tests, standing in for the MCP pool: tools that overlap, overflow, break and echo."""

from __future__ import annotations

from typing import Any

import anyio

from hermitcrab.host.mcp.pool import ToolOutcome
from hermitcrab.host.providers import ToolSpec


class Toolbox:
    """Tools for loop tests: `slow` waits until both slow calls are running, proving they overlap."""

    def __init__(self) -> None:
        self.running = 0
        self.both_running = anyio.Event()

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(name, name, {"type": "object"}) for name in ("slow", "huge", "broken", "echo")]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name == "slow":
            self.running += 1
            if self.running == 2:
                self.both_running.set()
            with anyio.fail_after(5):
                await self.both_running.wait()
            return ToolOutcome(f"slow {arguments['n']} done")
        if name == "huge":
            return ToolOutcome("A" * 50_000 + "Z")
        if name == "broken":
            raise RuntimeError("kaput")
        return ToolOutcome(arguments.get("text", ""))
