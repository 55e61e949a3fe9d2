"""Sessions: one append-only JSONL transcript each, rebuilt into model messages after a restart."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .providers.base import Message, ToolCall, Usage

logger = logging.getLogger(__name__)

INTERRUPTED = "[no result: the host stopped before this tool call finished]"
SUMMARY_HEADER = "[Summary of the earlier part of this conversation, written when it was compacted]"


class Transcript:
    """An append-only JSONL file; a torn last line (crash mid-write) is skipped with a warning."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, kind: str, **fields: Any) -> dict[str, Any]:
        entry = {"id": uuid.uuid4().hex[:12], "ts": dt.datetime.now(dt.UTC).isoformat(), "kind": kind, **fields}
        data = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            if size and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")  # seal a torn line left by a crash so this entry stays readable
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        return entry

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        entries: list[dict[str, Any]] = []
        for number, line in enumerate(self.path.read_bytes().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry: object = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                logger.warning("%s:%d: skipping a torn transcript line", self.path, number)
                continue
            if isinstance(entry, dict):
                entries.append(cast(dict[str, Any], entry))
        return entries


@dataclass
class Session:
    """One conversation: its key (e.g. `main`), its current transcript, and running totals."""

    key: str
    id: str
    transcript: Transcript
    usage: Usage = field(default_factory=Usage)

    def messages(self) -> list[Message]:
        return messages_from(self.transcript.entries())

    def handled(self, event_id: str) -> bool:
        """Whether a server event item was already turned into a turn (events may be delivered twice)."""
        return any(e.get("kind") == "event" and e.get("event_id") == event_id for e in self.transcript.entries())


class SessionStore:
    """Maps session keys to their current transcript under `state/sessions/`; `/new` starts a fresh one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._index_path = root / "sessions.json"

    def open(self, key: str) -> Session:
        index = self._index()
        record = index.get(key)
        if record is None:
            return self.new(key)
        session = Session(key, record["id"], Transcript(self.root / f"{record['id']}.jsonl"))
        session.usage = usage_from(session.transcript.entries())
        return session

    def new(self, key: str) -> Session:
        session_id = f"{_safe(key)}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
        index = self._index()
        index[key] = {"id": session_id, "created": dt.datetime.now(dt.UTC).isoformat()}
        self._write_index(index)
        return Session(key, session_id, Transcript(self.root / f"{session_id}.jsonl"))

    def _index(self) -> dict[str, Any]:
        try:
            data: object = json.loads(self._index_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError:
            logger.warning("%s is unreadable; starting a new index", self._index_path)
            return {}
        return cast(dict[str, Any], data) if isinstance(data, dict) else {}

    def _write_index(self, index: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self._index_path.with_suffix(f".{uuid.uuid4().hex[:6]}.tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump(index, handle, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self._index_path)


def messages_from(entries: list[dict[str, Any]]) -> list[Message]:
    """Rebuild the model's view: the latest compaction summary, then the entries it kept and those after it.

    A tool call left without a result by a crash gets an error result, so no provider sees a dangling call.
    """
    summary, live = split_at_compaction(entries)
    messages: list[Message] = [Message("user", f"{SUMMARY_HEADER}\n{summary}")] if summary else []
    pending: dict[str, str] = {}
    for entry in live:
        kind = entry.get("kind")
        if kind in ("user", "assistant") and pending:
            messages.extend(_interrupted(pending))
        if kind == "user":
            messages.append(Message("user", entry.get("text", "")))
        elif kind == "assistant":
            messages.append(Message("assistant", entry.get("text", "")))
        elif kind == "tool_call" and messages and messages[-1].role == "assistant":
            call = ToolCall(entry["call_id"], entry["name"], entry.get("arguments") or {})
            last = messages[-1]
            messages[-1] = Message("assistant", last.content, (*last.tool_calls, call))
            pending[call.id] = call.name
        elif kind == "tool_result" and entry.get("call_id") in pending:
            pending.pop(entry["call_id"])
            messages.append(
                Message(
                    "tool", entry.get("text", ""), tool_call_id=entry["call_id"], is_error=bool(entry.get("is_error"))
                )
            )
    messages.extend(_interrupted(pending))
    return messages


def split_at_compaction(entries: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """The latest compaction's summary and the entries still shown verbatim (kept ones, then newer ones)."""
    last = max((i for i, e in enumerate(entries) if e.get("kind") == "compaction"), default=None)
    if last is None:
        return None, entries
    compaction = entries[last]
    first_kept = next((i for i, e in enumerate(entries[:last]) if e.get("id") == compaction.get("first_kept_id")), last)
    return str(compaction.get("summary", "")), entries[first_kept:last] + entries[last + 1 :]


def usage_from(entries: list[dict[str, Any]]) -> Usage:
    """Tokens of every model call recorded in the transcript: the turns' and compaction's own."""
    total = Usage()
    for entry in entries:
        usage = entry.get("usage")
        if entry.get("kind") in ("assistant", "compaction") and isinstance(usage, dict):
            counts = cast(dict[str, int], usage)
            total = total + Usage(int(counts.get("input_tokens", 0)), int(counts.get("output_tokens", 0)))
    return total


def _interrupted(pending: dict[str, str]) -> list[Message]:
    results = [Message("tool", INTERRUPTED, tool_call_id=call_id, is_error=True) for call_id in pending]
    pending.clear()
    return results


def _safe(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in key)[:40] or "session"
