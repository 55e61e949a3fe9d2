"""Compaction: summarise the older part of a session so it fits the model's window, and record it.

The transcript keeps every entry; a `compaction` entry records the summary and the first entry kept verbatim,
so a restart rebuilds the same view. Cuts fall on user turns, never between a tool call and its result.
"""

from __future__ import annotations

import json
import logging
from importlib.resources import files
from typing import Any

from .providers.base import Message, Provider
from .session import Session, split_at_compaction
from .text import cut_middle

logger = logging.getLogger(__name__)

PROMPT = files("hermitcrab.host").joinpath("compaction_prompt.md").read_text(encoding="utf-8")
CHARS_PER_TOKEN = 4
MAX_ENTRY_CHARS = 4_000


def estimate_tokens(system: str, messages: list[Message]) -> int:
    """A cheap, provider-independent estimate: about four characters per token."""
    chars = len(system) + sum(
        len(m.content) + sum(len(json.dumps(c.arguments)) for c in m.tool_calls) for m in messages
    )
    return chars // CHARS_PER_TOKEN


async def compact(session: Session, provider: Provider, keep_recent_tokens: int) -> int:
    """Summarise all but the most recent turns; returns how many entries the summary replaced (0: nothing to do)."""
    summary, live = split_at_compaction(session.transcript.entries())
    cut = _cut(live, keep_recent_tokens)
    if cut == 0:
        return 0
    older = live[:cut]
    history = "\n\n".join(filter(None, [f"Earlier summary:\n{summary}" if summary else "", *map(_render, older)]))
    completion = await provider.complete(PROMPT, [Message("user", history)], [])
    tokens_before = sum(len(_render(e)) for e in live) // CHARS_PER_TOKEN
    session.transcript.append(
        "compaction",
        summary=completion.message.content,
        first_kept_id=live[cut]["id"],
        tokens_before=tokens_before,
        usage=completion.usage.as_entry(),
    )
    session.usage = session.usage + completion.usage
    logger.info("compacted %d entries of session %s (~%d tokens before)", cut, session.key, tokens_before)
    return cut


def _cut(live: list[dict[str, Any]], keep_recent_tokens: int) -> int:
    """Index of the first entry kept verbatim: the oldest user turn whose tail fits the budget, or the last one."""
    user_turns = [i for i, entry in enumerate(live) if entry.get("kind") == "user"]
    if len(user_turns) < 2:
        return 0
    tail_tokens = 0
    cut = user_turns[-1]
    for start, end in zip(reversed(user_turns), [len(live), *reversed(user_turns)], strict=False):
        tail_tokens += sum(len(_render(e)) for e in live[start:end]) // CHARS_PER_TOKEN
        if tail_tokens > keep_recent_tokens:
            break
        cut = start
    return cut if cut > 0 else user_turns[-1]


def _render(entry: dict[str, Any]) -> str:
    kind = entry.get("kind")
    if kind == "tool_call":
        text = f"tool call {entry.get('name')}({json.dumps(entry.get('arguments'), ensure_ascii=False)})"
    elif kind == "tool_result":
        text = f"tool result {entry.get('name')}: {entry.get('text', '')}"
    elif kind in ("user", "assistant"):
        text = f"{kind}: {entry.get('text', '')}"
    else:
        return ""
    return cut_middle(text, MAX_ENTRY_CHARS, "cut for the summary")
