"""The web channel: the owner's conversation with the agent in the dashboard's Chat page.

A message typed there enters as the owner's direct message (`Event.inbound_id` `web:<id>`, the id made by the page,
so a message sent twice, or again after a restart, is answered once: the inbox drops the repeat). What the page
shows is this channel's own log of the conversation, `state/web/chat.jsonl`: the owner's messages, the agent's
replies and messages, its words before a tool call, tool lines, questions with their outcome and compactions, each
appended with one fsync and the last `KEPT` held. The log rather than the session's transcript is the history,
because the main session's transcript holds other channels' turns, set-aside heartbeats and memory flushes, and
neither the questions nor what was answered to them.

An entry is a dict: `id`, `at` (UTC ISO 8601), `kind` and its fields, `user` and `agent` with `text`, `tool` with
`call_id`, `name`, `arguments`, `ok` and `seconds` (None while it runs), `question` with `text`, `choices`, `open`
and `answer`, `note` with `text`. A later change to an entry (a tool ends, a question is settled) is an `update`
line naming the entry it changes (`of`).

Everything shown, the log's entries and the passing words of a reply as the model streams it, is numbered in one
sequence per run of the host; a page's event stream that reconnects with the last number it saw (SSE's
Last-Event-ID, `<run>.<number>`) gets what came after it, and `reset` when that is no longer held (another run, or
too far back), so nothing is shown twice or lost.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import secrets
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from hermitcrab.host.events import (
    Compaction,
    Event,
    MessageDone,
    Target,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnDone,
    TurnEvent,
    person,
)
from hermitcrab.util.files import append_line, atomic_write_text, read_jsonl

logger = logging.getLogger(__name__)

CONVERSATION = "chat"
"""The channel's one conversation: the owner's direct messages share a session whatever page they come from."""
USER = "owner"
TARGET = Target("web", CONVERSATION, USER)
PRINCIPAL = person("owner", "web", USER)
KEPT = 500
"""Entries held (and shown); older ones stay in the session's transcript."""
REPLAYED = 5000
"""Recent shown events held for a reconnecting page; one from further back reloads instead."""
FOLLOWER_BUFFER = 2000
"""Events waiting for one page's stream; a page that falls that far behind is dropped and reconnects."""
MAX_MESSAGE_CHARS = 100_000
MAX_ENTRY_CHARS = 200_000
MAX_ARGUMENT_CHARS = 300

Entry = dict[str, Any]
Submit = Callable[[Event], Awaitable[None]]


@dataclass(frozen=True)
class Shown:
    """One thing a page is told: `entry` (a new entry), `update` (an entry changed, as it is now),
    `delta` (words of the reply being streamed), `draft` (the streamed words replaced, "" when they are gone),
    `working` (`on`: a turn runs), or `reset` (reload: what came since the page's cursor is no longer held)."""

    number: int
    type: str
    data: dict[str, Any]

    def cursor(self, run: str) -> str:
        return f"{run}.{self.number}"


@dataclass(frozen=True)
class Snapshot:
    """The conversation as a page opened now shows it; its stream goes on from `cursor`."""

    entries: list[Entry]
    draft: str
    working: bool
    cursor: str
    left_out: bool
    """Older entries exist than those held."""
    problem: str | None


@dataclass
class _Waiting:
    """A question shown with choices, until a button or a typed reply answers it."""

    choices: tuple[str, ...]
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: str | None = None


class WebChannel:
    """The owner's conversation in the dashboard's Chat page: its log, the pages following it, its open questions."""

    name = "web"
    display = "a web page: Markdown, tables and code blocks render; long output is fine"

    def __init__(self, submit: Submit, state: Path) -> None:
        self._submit = submit
        self._path = state / "web" / "chat.jsonl"
        self._run = secrets.token_hex(4)
        self._number = 0
        self._entries: dict[int, Entry] = {}
        self._lines = 0
        self._left_out = False
        self._problem: str | None = None
        self._recent: deque[Shown] = deque(maxlen=REPLAYED)
        self._followers: set[MemoryObjectSendStream[Shown]] = set()
        self._draft = ""
        self._working = False
        self._calls: dict[str, int] = {}
        self._questions: dict[int, _Waiting] = {}
        self._taken: set[str] = set()
        """Messages being submitted, so a request sent twice at once is taken once."""
        self._load()

    # --- the host's side ---

    async def send(self, target: Target, text: str) -> None:
        """A reply or a message: it takes the place of the streamed words, if any, and stays in the log."""
        self._require(target)
        self._set_draft("")
        self._add("agent", text=_capped(text, MAX_ENTRY_CHARS))

    async def typing(self, target: Target) -> None:
        self._set_working(True)

    async def idle(self, target: Target) -> None:
        self._set_working(False)

    def check_conversation(self, to: str) -> str | None:
        if to != CONVERSATION:
            return f"delivery.to: the web channel has one conversation, {CONVERSATION!r}, not {to[:80]!r}"
        return None

    def listener(self, target: Target) -> Callable[[TurnEvent], Awaitable[None]] | None:
        return self._show if target.conversation == CONVERSATION else None

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Show the question, with a button per choice; the pressed choice, or None when withdrawn (a typed reply
        answered it first, or it expired)."""
        self._require(target)
        waiting = _Waiting(tuple(choices or ()))
        entry = self._add("question", text=question, choices=list(waiting.choices), open=True, answer=None)
        self._questions[entry["id"]] = waiting
        try:
            await waiting.answered.wait()
            return waiting.answer
        finally:
            del self._questions[entry["id"]]
            self._update(entry["id"], open=False, answer=waiting.answer)

    async def _show(self, event: TurnEvent) -> None:
        """A turn as it happens: the reply's words as they come, a line per tool call, compactions."""
        if isinstance(event, TextDelta):
            self._draft += event.text
            self._publish("delta", {"text": event.text})
        elif isinstance(event, MessageDone) and event.tool_calls:
            self._set_draft("")
            if event.text.strip():  # words said before the tool calls: not the reply, but said
                self._add("agent", text=_capped(event.text, MAX_ENTRY_CHARS))
        elif isinstance(event, ToolStarted):
            arguments = _capped(event.arguments, MAX_ARGUMENT_CHARS)
            entry = self._add(
                "tool", call_id=event.call_id, name=event.name, arguments=arguments, ok=None, seconds=None
            )
            self._calls[event.call_id] = entry["id"]
        elif isinstance(event, ToolFinished):
            started = self._calls.pop(event.call_id, None)
            if started is not None:
                self._update(started, ok=event.ok, seconds=round(event.duration_s, 1))
        elif isinstance(event, Compaction):
            said = f"Compacted the conversation: {event.before_chars:,} → {event.after_chars:,} characters."
            self._add("note", text=said)
        elif isinstance(event, TurnDone) and event.reply is None:
            self._set_draft("")  # a silent answer: its held-back words are not a reply

    # --- the page's side ---

    async def take(self, text: str, message_id: str) -> str | None:
        """The owner's message from the page (`message_id` a UUID the page made for it); why not, as a sentence."""
        text = text.strip()
        if not text:
            return "Type a message first."
        if len(text) > MAX_MESSAGE_CHARS:
            return f"That message is {len(text):,} characters long; the chat takes up to {MAX_MESSAGE_CHARS:,}."
        try:
            message_id = str(uuid.UUID(message_id))  # one spelling: `{...}`, upper case or no dashes are the same id
        except ValueError:
            return "The page sent the message without a proper id: reload the page and send it again."
        if message_id in self._taken or any(entry.get("message") == message_id for entry in self._entries.values()):
            return None  # sent twice (a retried request): it is on its way already
        self._taken.add(message_id)
        target = Target(self.name, CONVERSATION, USER, reply_to=message_id)
        try:
            await self._submit(
                Event("message", text, target, chat="direct", principal=PRINCIPAL, inbound_id=f"web:{message_id}")
            )
            self._add("user", text=text, message=message_id)
        finally:
            self._taken.discard(message_id)
        return None

    def answer(self, question: int, choice: str) -> str | None:
        """A choice pressed on the page; why it cannot answer, as a sentence."""
        waiting = self._questions.get(question)
        if waiting is None:
            return "That question is no longer waiting for an answer."
        if choice not in waiting.choices:
            return f"{choice[:80]!r} is not one of the question's choices."
        waiting.answer = choice
        waiting.answered.set()
        return None

    def snapshot(self) -> Snapshot:
        return Snapshot(
            [dict(entry) for entry in self._entries.values()],
            self._draft,
            self._working,
            f"{self._run}.{self._number}",
            self._left_out,
            self._problem,
        )

    async def follow(self, cursor: str | None) -> AsyncIterator[tuple[str, Shown]]:
        """What is shown after `cursor` (a snapshot's, or the last event a page saw), then as it happens, each with
        its cursor; a single `reset` when `cursor` is not held. Ends when the page falls too far behind."""
        backlog = self._since(cursor)
        if backlog is None:
            yield "", Shown(self._number, "reset", {})
            return
        send, receive = anyio.create_memory_object_stream[Shown](FOLLOWER_BUFFER)
        self._followers.add(send)
        try:
            for shown in backlog:
                yield shown.cursor(self._run), shown
            async with receive:
                async for shown in receive:
                    yield shown.cursor(self._run), shown
        finally:
            self._followers.discard(send)
            send.close()

    # --- the log ---

    def _since(self, cursor: str | None) -> list[Shown] | None:
        if cursor is None:
            return []
        run, _, number = cursor.partition(".")
        after = _counted(number)
        if run != self._run or after is None or after > self._number:
            return None
        if after < self._number and (not self._recent or self._recent[0].number > after + 1):
            return None
        return [shown for shown in self._recent if shown.number > after]

    def _add(self, kind: str, **fields: Any) -> Entry:
        self._number += 1
        entry: Entry = {"id": self._number, "at": dt.datetime.now(dt.UTC).isoformat(), "kind": kind, **fields}
        self._entries[entry["id"]] = entry
        while len(self._entries) > KEPT:
            del self._entries[next(iter(self._entries))]
            self._left_out = True
        self._write(entry)
        self._publish("entry", dict(entry), numbered=True)
        return entry

    def _update(self, of: int, **fields: Any) -> None:
        """Change a held entry; a page is sent the entry as it is now."""
        entry = self._entries.get(of)
        if entry is None:
            return
        entry.update(fields)
        self._write({"kind": "update", "of": of, **fields})
        self._publish("update", dict(entry))

    def _set_draft(self, text: str) -> None:
        if self._draft != text:
            self._draft = text
            self._publish("draft", {"text": text})

    def _set_working(self, on: bool) -> None:
        if self._working != on:
            self._working = on
            self._publish("working", {"on": on})

    def _publish(self, kind: str, data: dict[str, Any], *, numbered: bool = False) -> None:
        """Tell every following page; `numbered` when the caller took the number already (an entry's is its id)."""
        if not numbered:
            self._number += 1
        shown = Shown(self._number, kind, data)
        self._recent.append(shown)
        for follower in list(self._followers):
            try:
                follower.send_nowait(shown)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                follower.close()  # too far behind, or gone: its page reconnects and catches up or reloads
                self._followers.discard(follower)

    def _load(self) -> None:
        try:
            records = list(read_jsonl(self._path))
        except OSError as exc:
            self._problem = f"The chat's history could not be read ({exc.strerror or exc}); it starts afresh here."
            return
        unreadable = 0
        for record in records:
            if not _well_formed(record):
                unreadable += 1
            elif record["kind"] == "update":
                self._entries.get(record["of"], {}).update({k: v for k, v in record.items() if k not in ("kind", "of")})
            else:
                self._entries[record["id"]] = record
        for entry in self._entries.values():
            if entry["kind"] == "question" and entry.get("open"):
                entry.update(open=False, answer=None)  # its asker ended with the host that ran it
            if entry["kind"] == "tool" and entry.get("ok") is None:
                entry["ok"] = False  # the host stopped while it ran
        self._number = max(self._entries, default=0)
        self._lines = len(records)
        if len(self._entries) > KEPT:
            self._entries = dict(list(self._entries.items())[-KEPT:])
            self._left_out = True
        if unreadable:
            self._problem = f"{unreadable} lines of the chat's history could not be read and are left out."

    def _write(self, record: dict[str, Any]) -> None:
        """Append to the log, rewriting it with only what is held once it has grown to twice that. A log that
        cannot be written leaves the chat working, only forgetful, and the page says so."""
        try:
            self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self._lines >= 2 * KEPT:  # what is held already has `record` in it
                lines = [json.dumps(entry, ensure_ascii=False) + "\n" for entry in self._entries.values()]
                atomic_write_text(self._path, "".join(lines))
                self._lines = len(lines)
            else:
                append_line(self._path, json.dumps(record, ensure_ascii=False))
                self._lines += 1
        except OSError as exc:
            logger.warning("could not write the web chat's log %s: %s", self._path, exc)
            self._problem = f"The chat's history cannot be saved ({exc.strerror or exc}): a reload may lose it."

    def _require(self, target: Target) -> None:
        if problem := self.check_conversation(target.conversation):
            raise LookupError(problem)


def _well_formed(record: object) -> bool:
    """An entry or update as `_write` writes them: a torn or hand-edited line must not break the page."""
    if not isinstance(record, dict):
        return False
    fields = cast(dict[str, Any], record)
    key = fields.get("of" if fields.get("kind") == "update" else "id")
    return isinstance(fields.get("kind"), str) and isinstance(key, int) and not isinstance(key, bool)


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n… ({len(text) - limit:,} more characters; the session's transcript has them all)"


def _counted(text: str) -> int | None:
    """A cursor's entry number, or None: ASCII digits only (`²` passes `isdigit` but not `int`), and short."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None
