"""A session's running sub-agents, asked over MCP of every server that offers `sessions_list` (the spawn server)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, cast

import anyio

from .pool import McpPool

logger = logging.getLogger(__name__)
LIST_TOOL = "sessions_list"
ASK_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Subagent:
    run_id: str
    label: str
    status: str
    elapsed_s: float | None

    def describe(self) -> str:
        since = f", {self.elapsed_s:.0f} s so far" if self.elapsed_s is not None else ""
        return f'"{self.label}" (run {self.run_id}, {self.status}{since})'


async def running_subagents(pool: McpPool | None, session_key: str) -> list[Subagent]:
    """The session's queued and running sub-agents; a server that is down or slow just adds none."""
    if pool is None:
        return []
    found: list[Subagent] = []
    for name, route in pool.ready_routes(LIST_TOOL).items():
        with anyio.move_on_after(ASK_TIMEOUT_S):
            outcome = await pool.call(name, {"active_only": True}, session_key)
            if outcome.is_error:
                logger.warning("%s could not list sub-agents: %s", route.server, outcome.text)
                continue
            found.extend(_parse(outcome.text))
    return found


def runtime_fact(children: list[Subagent]) -> str:
    """The system prompt's line about running sub-agents (empty when there are none)."""
    if not children:
        return ""
    listed = "; ".join(child.describe() for child in children)
    return (
        f"\n- Sub-agents still working for this session ({len(children)}): {listed}. Each one's result arrives here "
        "as a message by itself: do not poll, and wait for all of them before you give your final answer."
    )


def _parse(text: str) -> list[Subagent]:
    try:
        data = cast(dict[str, Any], json.loads(text))
        runs = cast(list[dict[str, Any]], data["runs"])
        return [Subagent(str(r["run_id"]), str(r["label"]), str(r["status"]), r.get("elapsed_s")) for r in runs]
    except (ValueError, KeyError, TypeError):
        logger.warning("sessions_list answered something other than the spawn contract's JSON: %.200s", text)
        return []
