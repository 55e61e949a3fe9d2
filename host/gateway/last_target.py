"""The conversation the user last wrote from: where cron announcements and heartbeats go when nothing else is named.

Kept in `state/last_target.json` so a restarted host still knows where to deliver.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from hermitcrab.util.files import atomic_write_text

from ..events import Target

logger = logging.getLogger(__name__)


class LastTarget:
    """Remembers one Target on disk (written atomically, only when it changes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._current = self._read()

    def get(self) -> Target | None:
        return self._current

    def remember(self, target: Target) -> None:
        if target == self._current:
            return
        self._current = target = replace(target, reply_to=None)  # announcements start new threads
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fields = {"channel": target.channel, "conversation": target.conversation, "user": target.user}
        atomic_write_text(self.path, json.dumps(fields))

    def _read(self) -> Target | None:
        try:
            data: Any = json.loads(self.path.read_text(encoding="utf-8"))
            fields = cast(dict[str, Any], data)
            return Target(str(fields["channel"]), str(fields["conversation"]), fields.get("user"))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            logger.warning("%s is unreadable; no last conversation known", self.path)
            return None
