"""The heartbeat: every few minutes the agent reads HEARTBEAT.md in the main session and acts if something is due.

A reply of `HEARTBEAT_OK` (with at most 300 characters around it) means nothing needs attention: it is not
delivered, and its turn is set aside in the main session's transcript (kept for the record and its cost, never shown
to the model again), so quiet beats neither grow the context nor break the provider's prompt cache; the last beat's
time and outcome are kept in `state/heartbeat.json` for `/status`. A beat is skipped outside the active hours, while
the main session is busy, and while HEARTBEAT.md holds nothing but headings and comments (`init`'s), so an idle
assistant costs no model calls.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from hermitcrab.util.store import JsonFile

from ..config import HeartbeatSettings
from ..events import NOWHERE, Event, Target, system
from ..session.transcript import ASIDE, Session
from ..text import shorten
from ..turn.agent import Agent

logger = logging.getLogger(__name__)

HEARTBEAT_OK = "HEARTBEAT_OK"
MAX_OK_EXTRA_CHARS = 300
BEAT = system("the heartbeat, which the owner set up in HEARTBEAT.md", "owner")
PROMPT = (
    "[heartbeat] This is a scheduled check, not a message from the user. Read HEARTBEAT.md (in your workspace "
    "files above) and do what it asks that is due now. If nothing needs the user's attention, reply exactly "
    f"{HEARTBEAT_OK}."
)
LOG_FILE = "heartbeat.json"
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


@dataclass(frozen=True)
class BeatTurn:
    """A heartbeat's turn in the main session: where its transcript stood before, so a quiet one can be set aside."""

    session: Session
    log: JsonFile
    before: str | None
    """The id of the last entry the model saw before the turn (None: the session was empty)."""

    @classmethod
    def start(cls, agent: Agent, session_key: str) -> BeatTurn:
        session = agent.session(session_key)
        live = session.transcript.view().live
        return cls(session, JsonFile(agent.settings.state / LOG_FILE), str(live[-1]["id"]) if live else None)

    def end(self, reply: str | None, at: dt.datetime) -> None:
        """Set a quiet turn's entries aside and record the beat's outcome."""
        quiet = reply is None or is_heartbeat_ok(reply)
        if quiet:
            live = [str(entry["id"]) for entry in self.session.transcript.view().live]
            since = 0 if self.before is None else live.index(self.before) + 1 if self.before in live else len(live)
            if live[since:]:
                self.session.transcript.append(ASIDE, ids=live[since:], why="a quiet heartbeat")
        outcome = "nothing needed attention" if quiet else f"reported: {shorten(reply or '', 200)}"
        self.log.save({"at": at.isoformat(timespec="seconds"), "outcome": outcome})


def last_beat(state: Path) -> str:
    """`/status`'s line about the last heartbeat that ran."""
    beat = JsonFile(state / LOG_FILE).load("no heartbeat is known to have run")
    if not beat:
        return "Last heartbeat: none so far"
    return f"Last heartbeat: {beat.get('at', '?')}, {beat.get('outcome', '?')}"


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
