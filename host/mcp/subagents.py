"""A session's running sub-agents, asked over MCP of every server that offers `sessions_list` (the spawn server),
and kept (`SubagentWatch`) until that server may have changed them, so a turn makes no round trip for nothing."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
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


async def _ask(pool: McpPool, session_key: str) -> tuple[list[Subagent], bool]:
    """The sub-agents every lister named, and whether all of them answered (an answer worth keeping); a server
    that is down or slow just adds none."""
    found: list[Subagent] = []
    unanswered = 0
    for name, route in pool.ready_routes(LIST_TOOL).items():
        unanswered += 1
        with anyio.move_on_after(ASK_TIMEOUT_S):
            outcome = await pool.call(name, {"active_only": True}, session_key)
            if outcome.is_error:
                logger.warning("%s could not list sub-agents: %s", route.server, outcome.text)
                continue
            children = _parse(outcome.text)
            if children is not None:
                found.extend(children)
                unanswered -= 1
    return found, unanswered == 0


@dataclass(frozen=True)
class _Seen:
    children: list[Subagent]
    servers: frozenset[str]
    at: float


class SubagentWatch:
    """The running sub-agents of each session, asked once and kept while nothing can have changed them.

    The spawn server tells when a run ends (its `spawn://events` resource changes) or when it (re)connects; a run
    starts or is killed only by a call to that server, in the session it belongs to. So a session's view is asked
    again only after such an event or call, when the servers that list sub-agents came up or went down, or while a
    run is queued (it starts without a word); running times go on from when they were asked."""

    def __init__(self, pool: McpPool | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.pool = pool
        self._clock = clock
        self._seen: dict[str, _Seen] = {}
        self._changes = 0
        if pool is not None:
            pool.observers.append(self._heard)

    async def running(self, session_key: str) -> list[Subagent]:
        """The session's queued and running sub-agents, as every server that lists them would answer now."""
        if self.pool is None:
            return []
        servers = frozenset(route.server for route in self.pool.ready_routes(LIST_TOOL).values())
        seen = self._seen.get(session_key)
        if seen is not None and seen.servers == servers:
            gone = self._clock() - seen.at
            return [replace(c, elapsed_s=c.elapsed_s + gone) if c.elapsed_s is not None else c for c in seen.children]
        changes, asked_at = self._changes, self._clock()
        children, answered = await _ask(self.pool, session_key)
        if answered and changes == self._changes and all(child.status != "queued" for child in children):
            self._seen[session_key] = _Seen(children, servers, asked_at)
        return children

    def _heard(self, server: str, tool: str | None, session: str | None) -> None:
        if tool == LIST_TOOL or self.pool is None or server not in self.pool.handles:
            return
        if not any(offered.name == LIST_TOOL for offered in self.pool.handles[server].tools):
            return
        self._changes += 1
        if session is None:
            self._seen.clear()
        else:
            self._seen.pop(session, None)


def runtime_fact(children: list[Subagent]) -> str:
    """The system prompt's line about running sub-agents (empty when there are none)."""
    if not children:
        return ""
    listed = "; ".join(child.describe() for child in children)
    return (
        f"\n- Sub-agents still working for this session ({len(children)}): {listed}. Each one's result arrives here "
        "as a message by itself: do not poll, and wait for all of them before you give your final answer."
    )


def _parse(text: str) -> list[Subagent] | None:
    try:
        data = cast(dict[str, Any], json.loads(text))
        runs = cast(list[dict[str, Any]], data["runs"])
        return [Subagent(str(r["run_id"]), str(r["label"]), str(r["status"]), r.get("elapsed_s")) for r in runs]
    except (ValueError, KeyError, TypeError):
        logger.warning("sessions_list answered something other than the spawn contract's JSON: %.200s", text)
        return None
