"""The conversation the user last wrote from: where cron announcements and heartbeats go when nothing else is named.

Kept in `state/last_target.json` so a restarted host still knows where to deliver.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from hermitcrab.util.store import JsonFile

from ..events import Target

logger = logging.getLogger(__name__)


class LastTarget:
    """Remembers one Target on disk (written atomically, only when it changes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = JsonFile(path)
        self._current = self._read()

    def get(self) -> Target | None:
        return self._current

    def remember(self, target: Target) -> None:
        if target == self._current:
            return
        self._current = target = replace(target, reply_to=None)  # announcements start new threads
        self._file.save({"channel": target.channel, "conversation": target.conversation, "user": target.user})

    def _read(self) -> Target | None:
        fields = self._file.load("no last conversation known")
        if not fields:
            return None
        try:
            return Target(str(fields["channel"]), str(fields["conversation"]), fields.get("user"))
        except KeyError:
            logger.warning("%s names no conversation; no last conversation known", self.path)
            return None
