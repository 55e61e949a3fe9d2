"""Which chat messages hold the reply to a message, kept on disk so a restart finds them (one file per channel).

A crash mid-stream leaves a draft on screen and the message it answers in the host's inbox. The restart's recovery
answers that message once more (runs the turn again, or sends the answer or the "I restarted" notice); with the
draft's message ids recorded here, that answer replaces the draft instead of arriving as a second message. A record
outlives its finished reply, with a digest of the reply's text: a crash after the reply went out but before the inbox
heard of it makes recovery send the same text again, and that is then recognised as delivered, not sent twice. The
key is the conversation and the id of the user's message the reply answers (`answering`): what both the draft and
the recovered event know, and unique in apps whose message ids are per chat (Telegram's).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from hermitcrab.host.events import Target
from hermitcrab.util.store import JsonFile

KEEP = 200
"""Replies remembered: the latest ones, far more than a restart's recovery ever holds unanswered."""


@dataclass(frozen=True)
class Record:
    messages: tuple[str, ...]
    finished: str | None
    """The digest of the reply that finished the draft; None while it is a draft."""

    def delivered(self, text: str) -> bool:
        """Whether `text` is the reply these messages already show."""
        return self.finished == digest(text)


def answering(target: Target) -> str:
    """The key of the reply to `target.reply_to` in `target.conversation`."""
    return f"{target.conversation}/{target.reply_to}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class DraftRecords:
    """`{answered message id: {"messages": [ids], "finished": digest | null}}` in one JSON file."""

    def __init__(self, path: Path) -> None:
        self._file = JsonFile(path)
        loaded = self._file.load("drafts left by a crash will not be replaced; their replies come as new messages")
        self._records = {key: record for key, value in loaded.items() if (record := _record(value)) is not None}

    def get(self, answering: str) -> Record | None:
        return self._records.get(answering)

    def drafted(self, answering: str, messages: list[str]) -> None:
        self._save(answering, Record(tuple(messages), None))

    def finished(self, answering: str, messages: list[str], text: str) -> None:
        self._save(answering, Record(tuple(messages), digest(text)))

    def drop(self, answering: str) -> None:
        if self._records.pop(answering, None) is not None:
            self._write()

    def _save(self, answering: str, record: Record) -> None:
        self._records.pop(answering, None)
        self._records[answering] = record
        while len(self._records) > KEEP:
            del self._records[next(iter(self._records))]
        self._write()

    def _write(self) -> None:
        self._file.save(
            {key: {"messages": list(r.messages), "finished": r.finished} for key, r in self._records.items()}
        )


def _record(value: object) -> Record | None:
    """A record as saved; None for anything else (a hand edit), which is then forgotten."""
    if not isinstance(value, dict):
        return None
    fields = cast(dict[str, Any], value)
    messages, finished = fields.get("messages"), fields.get("finished")
    if not isinstance(messages, list) or not (finished is None or isinstance(finished, str)):
        return None
    return Record(tuple(str(ident) for ident in cast(list[object], messages)), finished)
