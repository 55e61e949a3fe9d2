"""The memory flush: before a compaction, a silent turn lets the agent write down what should outlive the summary.

Servers are swappable, so the writing tool is found by its name and description (an append-to-memory tool, else
file tools); with none, the flush is skipped and logged. The turn is recorded with `flush: true` and never shown
to the user or, afterwards, to the model.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from ..errors import ProviderError
from ..mcp.pool import ToolOutcome
from ..providers.base import Message, Provider, ToolSpec
from ..session.transcript import Session
from .exchange import Exchange
from .tool_calls import Toolbox

logger = logging.getLogger(__name__)

MAX_FLUSH_CALLS = 4
MAX_RESULT_CHARS = 4_000
WRITE_WORDS = frozenset({"append", "write", "save", "add", "store", "remember", "create", "insert", "record", "put"})
MEMORY_WORDS = re.compile(r"\b(memory|memories|remember|knowledge|notes?|journal)\b", re.I)
FILE_TOOLS = ("write_file", "edit_file", "append_file", "read_file")

PROMPT = """[Memory flush before compaction, {date}] This session is close to the model's context limit: its older \
part will be summarised next, and details can be lost. Before that happens, write down what should be remembered \
long-term with {tools}: decisions and their reasons, facts about the user, open tasks and promises, and exact \
identifiers (paths, URLs, IDs). {where} Write only what is not already stored. If there is nothing to store, reply \
with exactly NO_REPLY. The user does not see this turn."""


@dataclass(frozen=True)
class FlushTarget:
    """Where the notes go: today's daily log in the workspace (named in full for file tools)."""

    today: dt.date = field(default_factory=dt.date.today)
    workspace: Path | None = None

    @property
    def daily_log(self) -> str:
        return f"memory/{self.today:%Y-%m-%d}.md"


def memory_tools(specs: Sequence[ToolSpec]) -> list[ToolSpec]:
    """Tools that write long-term memory: a writing tool about memory, else file tools that can write."""
    writers = [spec for spec in specs if _words(spec.name) & WRITE_WORDS and _about_memory(spec)]
    if writers:
        return writers
    files = [spec for spec in specs if spec.name.endswith(FILE_TOOLS)]
    return files if any(not spec.name.endswith("read_file") for spec in files) else []


async def flush(
    session: Session,
    provider: Provider,
    toolbox: Toolbox,
    system: str,
    messages: Sequence[Message],
    target: FlushTarget,
    timeout_s: float,
) -> bool:
    """Run the silent flush turn on `messages`; False when skipped (no tool) or failed (logged, never raised)."""
    specs = memory_tools(toolbox.specs())
    if not specs:
        logger.info("memory flush skipped in session %s: no memory-writing tool is available", session.key)
        return False
    transcript = session.transcript
    prompt = PROMPT.format(
        date=target.today.isoformat(), tools=", ".join(s.name for s in specs), where=_where(specs, target)
    )
    transcript.append("user", text=prompt, flush=True)
    exchange = Exchange(
        provider,
        _Only(toolbox, {spec.name for spec in specs}),
        transcript,
        system,
        max_calls=MAX_FLUSH_CALLS,
        max_result_chars=MAX_RESULT_CHARS,
        marks={"flush": True},
    )
    try:
        with anyio.fail_after(timeout_s):
            await exchange.run([*messages, Message("user", prompt)])
    except (ProviderError, TimeoutError) as exc:
        logger.warning("memory flush in session %s failed: %s", session.key, exc or type(exc).__name__)
        return False
    logger.info("memory flush done in session %s", session.key)
    return True


class _Only:
    """The toolbox, narrowed to the memory-writing tools offered to the flush turn."""

    def __init__(self, toolbox: Toolbox, names: set[str]) -> None:
        self.toolbox = toolbox
        self.names = names

    def specs(self) -> list[ToolSpec]:
        return [spec for spec in self.toolbox.specs() if spec.name in self.names]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name not in self.names:
            return ToolOutcome(f"{name} is not available while storing memories", True)
        return await self.toolbox.call(name, arguments)


def _where(specs: Sequence[ToolSpec], target: FlushTarget) -> str:
    if any(spec.name.endswith(FILE_TOOLS) for spec in specs):
        place = target.workspace / target.daily_log if target.workspace else target.daily_log
        return f"Append to {place} (read it first if it exists, and keep what is there)."
    return f"Notes go to today's daily log ({target.daily_log}) unless a lasting fact belongs in MEMORY.md."


def _words(name: str) -> set[str]:
    return {word.lower() for word in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", name)}


def _about_memory(spec: ToolSpec) -> bool:
    return bool(MEMORY_WORDS.search(spec.name.replace("_", " ")) or MEMORY_WORDS.search(spec.description))


class Unattended:
    """The conversation of a flush started by a command: nobody to ask, nothing to send."""

    async def ask(self, question: str, choices: Sequence[str] | None = None) -> str | None:
        return None

    async def send(self, text: str, channel: str | None = None, to: str | None = None) -> None:
        logger.info("a message from an unattended flush was not sent: %s", text[:200])

    def target_problem(self, channel: str, to: str) -> str | None:
        return None  # nothing is sent from here
