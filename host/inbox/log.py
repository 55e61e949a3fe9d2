"""Inbound messages, recorded before their turn, so each is answered exactly once across crashes and restarts.

`state/inbox/inbox.jsonl` is an append-only log: an `accepted` line (the whole event) when a channel's message is
taken, before its turn starts, then an `ended` line once it was answered (or told why not). A message id seen before
is a replay (a reconnecting channel, a second delivery) and is dropped. After a crash, `pending()` gives back every
accepted message that never ended, for the host to answer. Opening the log compacts it: the pending messages and the
most recent ended ids stay, so it never grows without bound.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast, get_args

from hermitcrab.util.files import append_line, atomic_write_text

from ..events import Attachment, ChatType, Event, EventKind, Principal, Rights, Target

logger = logging.getLogger(__name__)

REMEMBERED = 5_000
"""Ended ids kept for de-duplication: far more than a channel replays after a reconnect or a restart."""


class Inbox:
    """The log of accepted inbound messages; one per home, written only by `hermitcrab run` (it holds the lock)."""

    def __init__(self, path: Path, remembered: int = REMEMBERED) -> None:
        self.path = path
        self._remembered = remembered
        self._pending: dict[str, Event] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._load()
        self.left_over = self.pending()
        """What was pending when the log was opened: the messages a crash or a stop left unanswered."""

    def accept(self, event: Event) -> bool:
        """Record `event` before its turn; False (and nothing recorded) when its id was seen before."""
        key = event.inbound_id
        if key is None:
            return True
        if key in self._pending or key in self._ended:
            return False
        self._pending[key] = event
        append_line(self.path, json.dumps({"op": "accepted", "event": to_record(event)}, ensure_ascii=False))
        return True

    def end(self, key: str | None) -> None:
        """The message was answered (or told it will not be): it never comes back."""
        if key is None or key not in self._pending:
            return
        del self._pending[key]
        self._remember(key)
        append_line(self.path, json.dumps({"op": "ended", "id": key}))

    def pending(self) -> list[Event]:
        """Accepted messages that never ended, oldest first."""
        return list(self._pending.values())

    def is_pending(self, key: str | None) -> bool:
        return key in self._pending

    def _remember(self, key: str) -> None:
        self._ended[key] = None
        while len(self._ended) > self._remembered:
            self._ended.popitem(last=False)

    def _load(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return
        for number, line in enumerate(lines, 1):
            try:
                entry = cast(dict[str, Any], json.loads(line))
                if entry["op"] == "accepted":
                    event = from_record(entry["event"])
                    self._pending[event.inbound_id or ""] = event
                else:
                    self._pending.pop(entry["id"], None)
                    self._remember(entry["id"])
            except (ValueError, KeyError, TypeError):
                logger.warning("%s line %d is unreadable (a crash mid-write?); skipped", self.path, number)
        self._compact()

    def _compact(self) -> None:
        lines = [json.dumps({"op": "ended", "id": key}) for key in self._ended]
        lines += [
            json.dumps({"op": "accepted", "event": to_record(e)}, ensure_ascii=False) for e in self._pending.values()
        ]
        atomic_write_text(self.path, "".join(f"{line}\n" for line in lines))


def to_record(event: Event) -> dict[str, Any]:
    """What it takes to run the event again in another process (not its callback)."""
    return {
        "kind": event.kind,
        "text": event.text,
        "target": asdict(event.target),
        "session_key": event.session_key,
        "chat": event.chat,
        "metadata": _plain(event.metadata),
        "deliver": event.deliver,
        "principal": asdict(event.principal),
        "inbound_id": event.inbound_id,
        "attachments": [asdict(attachment) for attachment in event.attachments],
    }


def from_record(record: dict[str, Any]) -> Event:
    kind, chat, principal = record["kind"], record["chat"], record["principal"]
    if kind not in get_args(EventKind) or chat not in (*get_args(ChatType), None):
        raise ValueError(f"not an event: kind {kind!r}, chat {chat!r}")
    if principal["kind"] not in get_args(Rights) or principal["rights"] not in get_args(Rights):
        raise ValueError(f"not a principal: {principal!r}")
    return Event(
        kind,
        str(record["text"]),
        Target(**record["target"]),
        session_key=str(record["session_key"]),
        chat=chat,
        metadata=dict(record["metadata"]),
        deliver=bool(record["deliver"]),
        principal=Principal(**principal),
        inbound_id=None if record.get("inbound_id") is None else str(record["inbound_id"]),
        attachments=tuple(Attachment(**attachment) for attachment in record.get("attachments", [])),
    )


def _plain(metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata entries that survive JSON; anything else stays behind."""
    kept: dict[str, Any] = {}
    for key, value in metadata.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        kept[key] = value
    return kept
