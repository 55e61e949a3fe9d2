"""Sessions: one append-only JSONL transcript each, kept in memory as the model's view and rebuilt after a restart.

A transcript is read once and then followed from a byte offset, so a turn costs the same in a week-old session as
in a new one: appends are read back from the tail, event ids are a set, and only the part after the latest
compaction's first kept entry stays in memory.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from hermitcrab.util.files import Stamp, append_line
from hermitcrab.util.store import JsonFile

from ..providers.base import Completion, Message, ToolCall, Usage
from ..providers.images import Image
from .media import MediaStore, reference_of

logger = logging.getLogger(__name__)
CHARS_PER_TOKEN = 4
"""The estimate of characters per token wherever no provider has counted."""

INTERRUPTED = "[no result: the host stopped before this tool call finished]"
ASIDE = "aside"
"""An entry naming earlier entries (`ids`) the model no longer sees: a quiet heartbeat's turn, kept for the record."""
SUMMARY_HEADER = "[Summary of the earlier part of this conversation, written when it was compacted]"
MESSAGE_OVERHEAD_CHARS = 16  # role and framing of one message on the wire, roughly four tokens
OPEN_SESSIONS = 64  # webhook and cron runs each make a session; only this many stay in memory


@dataclass
class View:
    """What the model sees of a transcript, kept up to date entry by entry.

    `reported` is the provider's count of the context at its last answer (input plus output tokens) and
    `added_chars` what was appended since, so the context size is known without re-counting everything.
    """

    summary: str | None = None
    live: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    usage: Usage = field(default_factory=Usage)
    event_ids: set[str] = field(default_factory=set[str])
    flushed: bool = False
    reported: int | None = None
    added_chars: int = 0
    media: MediaStore | None = None
    """Where the images its entries name are kept; without one, images are stated in their entries' text only."""
    _shown: list[Message] = field(default_factory=list[Message])
    _pending: dict[str, str] = field(default_factory=dict[str, str])

    def add(self, entry: dict[str, Any]) -> None:
        kind = entry.get("kind")
        usage = entry.get("usage")
        if kind in ("assistant", "compaction") and isinstance(usage, dict):
            self.usage = self.usage + Usage.from_entry(cast(dict[str, object], usage))
        if kind == "event":
            self.event_ids.add(str(entry.get("event_id")))
        elif kind == "compaction":
            first = entry.get("first_kept_id")
            kept = next((i for i, e in enumerate(self.live) if e.get("id") == first), len(self.live))
            self.summary, self.live = str(entry.get("summary", "")), self.live[kept:]
            self.flushed, self.reported, self.added_chars = False, None, 0
            self._show_again()
        elif kind == ASIDE:
            hidden = set(cast(list[str], entry.get("ids") or []))
            self.live = [kept for kept in self.live if kept.get("id") not in hidden]
            self._show_again()
        elif entry.get("flush"):
            self.flushed = True  # the memory flush's own turn: recorded, never shown to the model again
        elif kind in ("user", "assistant", "tool_call", "tool_result"):
            self.live.append(entry)
            self._show(entry)
            reported = _reported(entry)
            if reported:
                self.reported, self.added_chars = reported, 0
            else:
                self.added_chars += entry_chars(entry)

    def messages(self) -> list[Message]:
        """The model's view: the latest summary, then the entries it kept and those after it.

        A tool call left without a result by a crash gets an error result, so no provider sees a dangling call.
        """
        return [*self._shown, *_interrupted(dict(self._pending))]

    def _show_again(self) -> None:
        """Rebuild what the model sees from the summary and the live entries (after they changed other than by
        an append)."""
        self._shown = [Message("user", f"{SUMMARY_HEADER}\n{self.summary}")] if self.summary else []
        self._pending = {}
        for kept_entry in self.live:
            self._show(kept_entry)

    def _show(self, entry: dict[str, Any]) -> None:
        kind = entry.get("kind")
        shown, pending = self._shown, self._pending
        if kind in ("user", "assistant") and pending:
            shown.extend(_interrupted(pending))
        if kind == "user":
            note = entry.get("note")  # the host's note on the turn (when, where, who), a message of its own
            shown.extend([Message("user", str(note))] if note else [])
            shown.append(Message("user", entry.get("text", ""), images=self._images(entry)))
        elif kind == "assistant":
            shown.append(Message("assistant", entry.get("text", "")))
        elif kind == "tool_call" and shown and shown[-1].role == "assistant":
            call = ToolCall(entry["call_id"], entry["name"], entry.get("arguments") or {})
            shown[-1] = Message("assistant", shown[-1].content, (*shown[-1].tool_calls, call))
            pending[call.id] = call.name
        elif kind == "tool_result" and entry.get("call_id") in pending:
            pending.pop(entry["call_id"])
            is_error = bool(entry.get("is_error"))
            images = self._images(entry)
            shown.append(
                Message("tool", entry.get("text", ""), tool_call_id=entry["call_id"], is_error=is_error, images=images)
            )

    def _images(self, entry: dict[str, Any]) -> tuple[Image, ...]:
        """The images an entry names, read from the media store (one whose file is gone is left out, logged)."""
        references = entry.get("images")
        if self.media is None or not isinstance(references, list):
            return ()
        loaded = (self.media.load(reference) for reference in cast(list[object], references))
        return tuple(image for image in loaded if image is not None)

    def context_tokens(self) -> int | None:
        """The context size by the provider's last count plus an estimate of what came since; None if uncounted."""
        return None if self.reported is None else self.reported + self.added_chars // CHARS_PER_TOKEN


class Transcript:
    """An append-only JSONL file; a torn last line (crash mid-write) is skipped with a warning."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.media = MediaStore(path.parent / "media")
        self._view = View(media=self.media)
        self._offset = 0
        self._lines = 0

    def append_answer(self, completion: Completion, **fields: Any) -> dict[str, Any]:
        """Record a model answer with who gave it and what it cost (usage totals are summed from these)."""
        return self.append(
            "assistant",
            text=completion.message.content,
            model=completion.model,
            provider=completion.provider,
            usage=completion.usage.as_entry(),
            **fields,
        )

    def append(self, kind: str, **fields: Any) -> dict[str, Any]:
        entry = {"id": uuid.uuid4().hex[:12], "ts": dt.datetime.now(dt.UTC).isoformat(), "kind": kind, **fields}
        append_line(self.path, json.dumps(entry, ensure_ascii=False))
        self.view()  # read it back from the tail, with anything another process appended before it
        return entry

    def view(self) -> View:
        """The model's view, after reading whatever was appended to the file since the last call."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return self._view
        if size < self._offset:  # replaced or truncated by hand: start over from the file
            self._view, self._offset, self._lines = View(media=self.media), 0, 0
        if size > self._offset:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read(size - self._offset)
            complete = data.rfind(b"\n") + 1  # an unfinished last line waits until it is finished or sealed
            for entry in _parse(data[:complete], self.path, self._lines):
                self._view.add(entry)
            self._offset += complete
            self._lines += data.count(b"\n", 0, complete)
        return self._view

    def entries(self) -> list[dict[str, Any]]:
        """Every entry in the file, read afresh (for inspection and tests; turns use `view`)."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        return list(_parse(data if data.endswith(b"\n") else data + b"\n", self.path, 0))


@dataclass
class Session:
    """One conversation: its key (e.g. `main`), its current transcript, and running totals."""

    key: str
    id: str
    transcript: Transcript

    @property
    def usage(self) -> Usage:
        """Tokens of every model call recorded in the transcript: the turns', compaction's and the flush's."""
        return self.transcript.view().usage

    def messages(self) -> list[Message]:
        return self.transcript.view().messages()

    def handled(self, event_id: str) -> bool:
        """Whether a server event item was already turned into a turn (events may be delivered twice)."""
        return event_id in self.transcript.view().event_ids


class SessionStore:
    """Maps session keys to their current transcript under `state/sessions/`; `/new` starts a fresh one.

    The most recently used sessions stay open in memory, so a turn reads only what was appended since the last
    one; one that was closed to make room is read again from its file when it is next used.
    """

    def __init__(self, root: Path, open_sessions: int = OPEN_SESSIONS) -> None:
        self.root = root
        self._index_file = JsonFile(root / "sessions.json")
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._open_sessions = open_sessions
        self._index_cache: tuple[Stamp, dict[str, Any]] | None = None

    def open(self, key: str) -> Session:
        record = self._index().get(key)
        if record is None:
            return self.new(key)
        return self._session(key, str(record["id"]))

    def new(self, key: str) -> Session:
        session_id = f"{_safe(key)}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
        index = dict(self._index())
        index[key] = {"id": session_id, "created": dt.datetime.now(dt.UTC).isoformat()}
        self._write_index(index)
        return self._session(key, session_id)

    def transcripts(self) -> dict[str, Path]:
        """Every session key with the file of its current transcript, for listing them (the dashboard): nothing is
        opened, so the sessions kept in memory stay those the turns use."""
        records = self._index().items()
        return {key: self.root / f"{record['id']}.jsonl" for key, record in records if _names_transcript(record)}

    def _session(self, key: str, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None or session.key != key:
            session = Session(key, session_id, Transcript(self.root / f"{session_id}.jsonl"))
            self._sessions[session_id] = session
            while len(self._sessions) > self._open_sessions:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        return session

    def _index(self) -> dict[str, Any]:
        stamp = self._index_file.stamp()
        if stamp is None:
            return {}
        if self._index_cache is not None and self._index_cache[0] == stamp:
            return self._index_cache[1]
        index = self._index_file.load("starting a new index")
        self._index_cache = (stamp, index)
        return index

    def _write_index(self, index: dict[str, Any]) -> None:
        self._index_file.save(index)
        self._index_cache = None


def entry_chars(entry: dict[str, Any]) -> int:
    """Characters an entry adds to the model's context (for the four-characters-a-token estimate)."""
    arguments = entry.get("arguments")
    extra = len(json.dumps(arguments, ensure_ascii=False)) + len(str(entry.get("name", ""))) if arguments else 0
    images = entry.get("images")
    references = (reference_of(value) for value in cast(list[object], images)) if isinstance(images, list) else ()
    pictures = sum(reference.tokens * CHARS_PER_TOKEN for reference in references if reference is not None)
    text = len(str(entry.get("text", ""))) + len(str(entry.get("note", "")))
    return text + extra + pictures + MESSAGE_OVERHEAD_CHARS


def _reported(entry: dict[str, Any]) -> int:
    usage = entry.get("usage")
    if entry.get("kind") != "assistant" or not isinstance(usage, dict):
        return 0
    counts = cast(dict[str, int], usage)
    tokens_in = int(counts.get("input_tokens", 0))
    return tokens_in + int(counts.get("output_tokens", 0)) if tokens_in > 0 else 0


def _parse(data: bytes, path: Path, first_line: int) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(data.split(b"\n")[:-1], start=first_line + 1):
        if not line.strip():
            continue
        try:
            entry: object = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            logger.warning("%s:%d: skipping a torn transcript line", path, number)
            continue
        if isinstance(entry, dict):
            yield cast(dict[str, Any], entry)


def _interrupted(pending: dict[str, str]) -> list[Message]:
    results = [Message("tool", INTERRUPTED, tool_call_id=call_id, is_error=True) for call_id in pending]
    pending.clear()
    return results


def _names_transcript(record: object) -> bool:
    """Whether an index record names a transcript file inside the folder (a hand-edited index may not)."""
    found = cast(dict[str, object], record).get("id") if isinstance(record, dict) else None
    return isinstance(found, str) and bool(found) and all(ch.isalnum() or ch in "-_" for ch in found)


def _safe(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in key)[:40] or "session"
