"""Which Discord messages hold the draft of a reply not yet finished, kept on disk so a restart finds them.

A crash mid-stream leaves a draft on screen and the message it answers in the host's inbox. The restart's recovery
answers that message once more (runs the turn again, or sends the answer or the "I restarted" notice); with the
draft's message ids recorded here, that answer replaces the draft instead of arriving as a second message. The key
is the id of the user's message the reply answers: the one thing both the draft and the recovered event know.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from hermitcrab.util.store import JsonFile

KEEP = 200
"""Records kept at most: one is dropped when its reply is finished, so only crashed drafts pile up."""


class DraftRecords:
    """`{answered message id: [draft message ids]}` in one JSON file, saved on every change."""

    def __init__(self, path: Path) -> None:
        self._file = JsonFile(path)
        loaded = self._file.load("drafts left by a crash will not be replaced; their replies come as new messages")
        self._records: dict[str, list[str]] = {
            key: [str(ident) for ident in cast(list[object], value)]
            for key, value in loaded.items()
            if isinstance(value, list)
        }

    def get(self, answering: str) -> list[str]:
        return list(self._records.get(answering, []))

    def put(self, answering: str, messages: list[str]) -> None:
        self._records.pop(answering, None)
        self._records[answering] = list(messages)
        while len(self._records) > KEEP:
            del self._records[next(iter(self._records))]
        self._file.save(dict(self._records))

    def drop(self, answering: str) -> None:
        if self._records.pop(answering, None) is not None:
            self._file.save(dict(self._records))
