"""Compaction: summarise the older part of a session so it fits the model's window, and record it.

The older part is summarised in chunks that each fit the model, then merged with the previous summary; the
identifiers it held are checked mechanically and any the summary lacks are appended verbatim. A failed or
timed-out summary never loses history: a shortened copy is recorded instead and the caller is told. The
transcript keeps every entry; a `compaction` entry records the summary and the first entry kept verbatim, so a
restart rebuilds the same view. Cuts never fall between a tool call and its result.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import anyio

from ..config import AgentSettings
from ..errors import ProviderError
from ..providers.base import Message, Provider, Usage
from ..session.transcript import CHARS_PER_TOKEN, Session, entry_chars
from ..text import cut_middle
from . import identifiers

logger = logging.getLogger(__name__)

PROMPT = files("hermitcrab.host.turn").joinpath("compaction_prompt.md").read_text(encoding="utf-8")
MAX_ENTRY_CHARS = 4_000
STUB_CHARS = 200
MIN_CHUNK_TOKENS = 2_000


@dataclass(frozen=True)
class Budget:
    """Token sizes that govern compaction, scaled down for small windows."""

    window: int
    reserve: int
    keep_recent: int
    flush_margin: int
    timeout_s: float

    @classmethod
    def of(cls, settings: AgentSettings) -> Budget:
        window = settings.context_window_tokens
        reserve = min(settings.reserve_tokens, window // 4)
        threshold = window - reserve
        return cls(
            window,
            reserve,
            min(settings.keep_recent_tokens, threshold // 3),
            min(settings.flush_margin_tokens, threshold // 8),
            settings.compaction_timeout_s,
        )

    @property
    def threshold(self) -> int:
        """Compact when the context passes this many tokens."""
        return self.window - self.reserve

    @property
    def flush_at(self) -> int:
        """Run the memory flush when the context passes this many tokens."""
        return self.threshold - self.flush_margin

    @property
    def chunk_chars(self) -> int:
        """The most one summary call is given, so that it fits the model with room for its answer."""
        return max(MIN_CHUNK_TOKENS, self.threshold // 2) * CHARS_PER_TOKEN

    @property
    def summary_chars(self) -> int:
        return self.threshold // 4 * CHARS_PER_TOKEN

    @property
    def identifier_chars(self) -> int:
        """The cap of the "Exact identifiers" sections: a fifth of the budget."""
        return max(2_000, self.threshold // 5 * CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Compacted:
    """What a compaction did: how many entries it replaced (0: nothing) and, if the model failed, why."""

    replaced: int
    failure: str | None = None


async def compact(session: Session, provider: Provider, budget: Budget, *, required: bool = False) -> Compacted:
    """Summarise all but the most recent ~`budget.keep_recent` tokens and record the summary.

    Unless `required` (a `/compact` or a context overflow), an older part too small to be worth a summary is
    left alone, so compaction cannot loop on a context that stays large for other reasons.
    """
    view = session.transcript.view()
    previous, live = view.summary, list(view.live)
    cut = _cut(live, budget.keep_recent, budget.threshold // 2)
    older, kept = live[:cut], live[cut:]
    older_tokens = sum(map(entry_chars, older)) // CHARS_PER_TOKEN
    if cut == 0 or (not required and older_tokens < budget.keep_recent // 10):
        return Compacted(0)
    calls = _Calls(provider)
    failure = None
    try:
        with anyio.fail_after(budget.timeout_s):
            summary = await _summarise(calls, budget, previous, older)
    except (ProviderError, TimeoutError) as exc:
        failure = str(exc) or type(exc).__name__
        logger.warning("the summary of session %s failed (%s); recording a shortened copy", session.key, failure)
        summary = _shortened(previous, older, budget, failure)
    summary = _with_identifiers(summary, previous, older, kept, budget)
    session.transcript.append(
        "compaction",
        summary=summary,
        first_kept_id=kept[0]["id"],
        tokens_before=(len(previous or "") + sum(map(entry_chars, live))) // CHARS_PER_TOKEN,
        usage=calls.usage.as_entry(),
        calls=calls.count,
        model=calls.model,
        provider=calls.answered_by,
        **({"failure": failure} if failure else {}),
    )
    logger.info("compacted %d entries of session %s in %d model calls", cut, session.key, calls.count)
    return Compacted(cut, failure)


class _Calls:
    """The summarising calls of one compaction, and what they cost."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.usage = Usage()
        self.count = 0
        self.model = self.answered_by = ""  # who answered, so `hermitcrab usage` can price the calls

    async def summary(self, text: str, limit: int) -> str:
        completion = await self.provider.complete(PROMPT, [Message("user", text)], [])
        self.usage = self.usage + completion.usage
        self.count += 1
        self.model, self.answered_by = completion.model, completion.provider
        return cut_middle(completion.message.content.strip(), limit, "the summary was too long")


async def _summarise(calls: _Calls, budget: Budget, previous: str | None, older: list[dict[str, Any]]) -> str:
    """One call when the older part fits; else a summary per chunk, then merged with the previous summary."""
    earlier = [f"Earlier summary:\n{previous}"] if previous else []
    chunks = _pack([text for text in map(_render, older) if text], budget.chunk_chars)
    if len(chunks) == 1 and len("\n\n".join([*earlier, chunks[0]])) <= budget.chunk_chars:
        return await calls.summary("\n\n".join([*earlier, chunks[0]]), budget.summary_chars)
    parts = [
        await calls.summary(
            f"Part {n} of {len(chunks)} of the conversation, oldest first:\n\n{chunk}", budget.chunk_chars
        )
        for n, chunk in enumerate(chunks, start=1)
    ]
    return await _merge(calls, budget, [*earlier, *(f"Summary of part {n}:\n{p}" for n, p in enumerate(parts, 1))])


async def _merge(calls: _Calls, budget: Budget, summaries: list[str]) -> str:
    """Merge summaries of consecutive parts in as few calls as fit, in rounds until one is left.

    Each input is cut to a third of a call, so every call takes at least two and the rounds end.
    """
    intro = "Merge these summaries of consecutive parts of one conversation (oldest first) into one summary:\n\n"
    while True:
        groups = _pack(
            [cut_middle(s, budget.chunk_chars // 3, "cut to fit the merge") for s in summaries], budget.chunk_chars
        )
        merged = [await calls.summary(intro + group, budget.summary_chars) for group in groups]
        if len(merged) == 1:
            return merged[0]
        summaries = merged


def _pack(texts: Sequence[str], limit: int) -> list[str]:
    """Consecutive texts joined into as few chunks of at most `limit` characters as possible (at least one)."""
    chunks: list[list[str]] = [[]]
    size = 0
    for text in texts:
        if chunks[-1] and size + len(text) + 2 > limit:
            chunks.append([])
            size = 0
        chunks[-1].append(text)
        size += len(text) + 2
    return ["\n\n".join(chunk) for chunk in chunks]


def _shortened(previous: str | None, older: list[dict[str, Any]], budget: Budget, failure: str) -> str:
    """The model-free stand-in for a summary: messages kept, tool results cut to stubs, newest kept first."""
    stubs: list[str] = []
    used = 0
    for entry in reversed(older):
        stub = _render(entry, STUB_CHARS if entry.get("kind") in ("tool_call", "tool_result") else 1_000)
        if used + len(stub) > budget.summary_chars:
            break
        stubs.append(stub)
        used += len(stub) + 2
    left_out = len([e for e in older if _render(e)]) - len(stubs)
    head = (
        f"[The summary could not be written ({cut_middle(failure, 300)}). Below: the earlier summary, then the "
        "compacted messages with tool output cut short; the transcript file keeps everything.]"
    )
    gap = [f"[{left_out} older messages left out here]"] if left_out > 0 else []
    return "\n\n".join([head, *([previous] if previous else []), *gap, *reversed(stubs)])


def _with_identifiers(
    summary: str, previous: str | None, older: list[dict[str, Any]], kept: list[dict[str, Any]], budget: Budget
) -> str:
    """Append the identifiers of the compacted part (and of the previous summary) that the summary lacks."""
    newest_first = list(reversed(older))
    earlier_said, _, earlier_tools = (previous or "").partition(identifiers.TOOLS_HEADING)
    said_texts = [str(e.get("text", "")) for e in newest_first if e.get("kind") in ("user", "assistant")]
    tool_texts = [_full(e) for e in newest_first if e.get("kind") in ("tool_call", "tool_result")]
    shown = "\n".join(map(_full, kept))
    said = identifiers.missing([*said_texts, earlier_said], summary, shown)
    from_tools = identifiers.missing([*tool_texts, earlier_tools], summary, shown, skip=said)
    extra = identifiers.section(said, from_tools, budget.identifier_chars)
    return f"{summary}\n\n{extra}" if extra else summary


def _cut(live: list[dict[str, Any]], keep_recent_tokens: int, split_turn_above: int) -> int:
    """Index of the first entry kept verbatim (0: nothing to compact).

    The oldest user turn whose tail fits the budget, else the latest user turn. Only a latest turn larger than
    `split_turn_above` (a long run of tool calls) is cut inside: at the oldest model answer whose tail fits (an
    answer comes after all results of the calls before it), else at its latest answer.
    """
    tail = [0] * (len(live) + 1)
    for i in range(len(live) - 1, -1, -1):
        tail[i] = tail[i + 1] + entry_chars(live[i]) // CHARS_PER_TOKEN
    users = [i for i in range(1, len(live)) if live[i].get("kind") == "user"]
    fitting = [i for i in users if tail[i] <= keep_recent_tokens]
    if fitting:
        return fitting[0]
    if tail[max([0, *users])] <= split_turn_above:
        return max([0, *users])
    bounds = [i for i in range(max([0, *users]) + 1, len(live)) if live[i].get("kind") == "assistant"]
    fitting = [i for i in bounds if tail[i] <= keep_recent_tokens]
    if fitting:
        return fitting[0]
    return max([*users, *bounds], default=0)


def _full(entry: dict[str, Any]) -> str:
    return f"{entry.get('text', '')} {json.dumps(entry.get('arguments') or {}, ensure_ascii=False)}"


def _render(entry: dict[str, Any], limit: int = MAX_ENTRY_CHARS) -> str:
    kind = entry.get("kind")
    if kind == "tool_call":
        text = f"tool call {entry.get('name')}({json.dumps(entry.get('arguments'), ensure_ascii=False)})"
    elif kind == "tool_result":
        text = f"tool result {entry.get('name')}: {entry.get('text', '')}"
    elif kind in ("user", "assistant"):
        text = f"{kind}: {entry.get('text', '')}"
    else:
        return ""
    return cut_middle(text, limit, "cut for the summary")
