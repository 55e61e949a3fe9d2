"""What the Sessions page reads of a transcript file: its size and tokens, and its entries as the page shows them.

The page reads the JSONL files themselves rather than the host's open sessions (`SessionStore` keeps only the ones
turns use in memory, and listing must not push those out). Only whole lines are read: the line a turn is writing
waits for the next look, and a torn line (a crash mid-write) is skipped as the transcript itself skips it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from hermitcrab.host.providers.base import Usage
from hermitcrab.util.files import Stamp, stamp

MESSAGES = ("user", "assistant")
TEXTS = ("user", "assistant", "tool_result")
HEAD_CHARS = 2_000
"""A message longer than this shows its start; the rest is one click away (folded)."""


@dataclass(frozen=True)
class Summary:
    """One transcript in a line: its messages (the user's and the assistant's words; an answer that only calls tools
    is its calls), the characters of every message and tool result, the tokens of every model call it records (turns,
    compactions, the memory flush, as `/status` counts them), and its last activity (a Unix time; None while it has
    no file)."""

    messages: int = 0
    chars: int = 0
    usage: Usage = field(default_factory=Usage)
    changed: float | None = None
    problem: str | None = None
    """Why the file could not be read (its permissions, a folder in its place), for the page to say."""


@dataclass(frozen=True)
class Shown:
    """An entry as the page shows it: who speaks (`role`), its text split at `HEAD_CHARS` (`rest` is folded), and
    what kind of line it is (`kind`: the transcript's, which the template styles and folds)."""

    kind: str
    role: str
    when: float | None
    head: str
    rest: str = ""
    detail: str = ""
    """A tool call's arguments, a compaction's summary: folded under the line."""
    failed: bool = False
    aside: bool = False
    """A memory flush's or a quiet heartbeat's entry: recorded, never shown to the model again."""


class Summaries:
    """Each transcript's `Summary`, read again only when its file changed (by its stamp)."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[Stamp, Summary]] = {}

    def of(self, path: Path) -> Summary:
        now = stamp(path)
        if now is None:
            return Summary()
        known = self._known.get(path)
        if known is not None and known[0] == now:
            return known[1]
        try:
            entries, _ = read_entries(path)
            summary = summarise(entries, path.stat().st_mtime)
        except OSError as exc:
            return Summary(problem=f"its transcript {path.name} could not be read ({exc.strerror or exc})")
        self._known[path] = (now, summary)
        return summary


def summarise(entries: list[dict[str, Any]], changed: float) -> Summary:
    """The summary of a transcript's `entries`; its last activity is its last entry's time, else `changed` (the
    file's, which a copy or a restore from a backup moves)."""
    usage = Usage()
    for entry in entries:
        counts = entry.get("usage")
        if entry.get("kind") in ("assistant", "compaction") and isinstance(counts, dict):
            usage = usage + Usage.from_entry(cast(dict[str, object], counts))
    return Summary(
        messages=sum(entry.get("kind") in MESSAGES and bool(entry.get("text")) for entry in entries),
        chars=sum(len(str(entry.get("text", ""))) for entry in entries if entry.get("kind") in TEXTS),
        usage=usage,
        changed=next((when for entry in reversed(entries) if (when := _when(entry.get("ts"))) is not None), changed),
    )


def read_entries(path: Path, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The entries in the whole lines of `path` from byte `offset` on, and the offset after the last of them."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    complete = data.rfind(b"\n") + 1
    entries: list[dict[str, Any]] = []
    for line in data[:complete].split(b"\n"):
        try:
            entry: object = json.loads(line) if line.strip() else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(entry, dict):
            entries.append(cast(dict[str, Any], entry))
    return entries, offset + complete


def shown(entries: list[dict[str, Any]]) -> list[Shown]:
    """The entries a person reads, in order: messages, tool calls and results, compactions; bookkeeping (handled
    event ids, the list of entries set aside) is left out, and what was set aside is marked."""
    hidden = _set_aside(entries)
    lines = (_shown(entry, bool(entry.get("flush")) or entry.get("id") in hidden) for entry in entries)
    return [line for line in lines if line is not None]


def _set_aside(entries: list[dict[str, Any]]) -> set[str]:
    """The ids of the entries an `aside` entry names (a quiet heartbeat's turn)."""
    ids: set[str] = set()
    for entry in entries:
        named = entry.get("ids")
        if entry.get("kind") == "aside" and isinstance(named, list):
            ids.update(str(kept) for kept in cast(list[object], named))
    return ids


def _shown(entry: dict[str, Any], aside: bool) -> Shown | None:
    kind = str(entry.get("kind"))
    when = _when(entry.get("ts"))
    if kind in MESSAGES:
        text = str(entry.get("text") or "")
        if not text:
            return None  # an answer that only calls tools: its calls follow as lines of their own
        role = _speaker(entry)
        return Shown(kind, role, when, text[:HEAD_CHARS], text[HEAD_CHARS:], aside=aside)
    if kind == "tool_call":
        arguments = json.dumps(entry.get("arguments") or {}, ensure_ascii=False, indent=2)
        return Shown(kind, "Tool call", when, str(entry.get("name", "?")), detail=arguments, aside=aside)
    if kind == "tool_result":
        text = str(entry.get("text") or "")
        failed = bool(entry.get("is_error"))
        name = str(entry.get("name", "?"))
        return Shown(kind, "Tool result", when, name, detail=text, failed=failed, aside=aside)
    if kind == "compaction":
        failure = entry.get("failure")
        said = f"could not summarise: {failure}" if failure else _compacted(entry)
        return Shown(kind, "Compaction", when, said, detail=str(entry.get("summary") or ""), failed=bool(failure))
    return None


def _speaker(entry: dict[str, Any]) -> str:
    """Who wrote a message: the memory flush's prompt is the host's, an event's (a heartbeat, a job) its trigger's."""
    if entry.get("kind") == "assistant":
        return "Assistant (memory flush)" if entry.get("flush") else "Assistant"
    if entry.get("flush"):
        return "Host (memory flush)"
    trigger = entry.get("trigger")
    return f"Event ({trigger})" if trigger else "User"


def _compacted(entry: dict[str, Any]) -> str:
    before = entry.get("tokens_before")
    size = f" (about {before:,} tokens)" if isinstance(before, int) else ""
    return f"The conversation before this point{size} was summarised; the model sees the summary from here on."


def _when(value: object) -> float | None:
    """A transcript's `ts` (UTC ISO 8601) as a Unix time; None when it is missing or not a time."""
    try:
        moment = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()
