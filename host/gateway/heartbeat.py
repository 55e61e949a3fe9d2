"""The heartbeat: every few minutes the agent reads HEARTBEAT.md in the main session and acts if something is due.

A reply of `HEARTBEAT_OK` (with at most 300 characters around it) means nothing needs attention and is not
delivered. A beat is skipped outside the active hours, while the main session is busy, and while HEARTBEAT.md holds
nothing but headings and comments, so an idle assistant costs no model calls.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from ..config import HeartbeatSettings
from ..events import NOWHERE, Event, Target, system

logger = logging.getLogger(__name__)

HEARTBEAT_OK = "HEARTBEAT_OK"
MAX_OK_EXTRA_CHARS = 300
BEAT = system("the heartbeat, which the owner set up in HEARTBEAT.md", "owner")
PROMPT = (
    "[heartbeat] This is a scheduled check, not a message from the user. Read HEARTBEAT.md (in your workspace "
    "files above) and do what it asks that is due now. If nothing needs the user's attention, reply exactly "
    f"{HEARTBEAT_OK}."
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def is_heartbeat_ok(reply: str) -> bool:
    """Whether a heartbeat reply only says that nothing needs attention."""
    text = reply.strip()
    if text.startswith(HEARTBEAT_OK):
        rest = text.removeprefix(HEARTBEAT_OK)
    elif text.endswith(HEARTBEAT_OK):
        rest = text.removesuffix(HEARTBEAT_OK)
    else:
        return False
    return len(rest.strip()) <= MAX_OK_EXTRA_CHARS


def has_tasks(markdown: str) -> bool:
    """Whether HEARTBEAT.md says anything beyond headings, comments and blank lines."""
    lines = _COMMENT.sub("", markdown).splitlines()
    return any(line.strip() and not line.lstrip().startswith("#") for line in lines)


class Heartbeat:
    """Submits a heartbeat event for the main session on a timer, when one is worth a model call."""

    def __init__(
        self,
        settings: HeartbeatSettings,
        workspace: Path,
        submit: Callable[[Event], Awaitable[None]],
        busy: Callable[[], bool],
        target: Callable[[], Target | None],
        now: Callable[[], dt.datetime],
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self._submit = submit
        self._busy = busy
        self._target = target
        self._now = now

    async def run(self) -> None:
        """Beat until cancelled; does nothing when the interval is 0."""
        if self.settings.every_minutes <= 0:
            return
        while True:
            await anyio.sleep(self.settings.every_minutes * 60)
            await self.beat()

    async def beat(self) -> bool:
        """One beat: submit the heartbeat event unless there is a reason to skip; returns whether it was sent."""
        reason = self.skip_reason()
        if reason is not None:
            logger.info("heartbeat skipped: %s", reason)
            return False
        target = self._target()
        await self._submit(Event("heartbeat", PROMPT, target or NOWHERE, deliver=target is not None, principal=BEAT))
        return True

    def skip_reason(self) -> str | None:
        if not self.settings.active_at(self._now()):
            return "outside the active hours"
        if self._busy():
            return "the main session is busy"
        try:
            tasks = has_tasks((self.workspace / "HEARTBEAT.md").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            tasks = False
        return None if tasks else "HEARTBEAT.md has no tasks"
