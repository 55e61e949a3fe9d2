"""The hook events, the JSON each one carries (with its version) and the answers a hook may give.

A payload is plain JSON so that a command in any language reads it from stdin and a Python hook gets the same
dict: `{"event", "version", ...}` plus the fields of docs/hooks.md. Answers are read strictly: anything but the
documented fields is an error of that hook, never guessed at.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

from ..events import Event, Principal, Target
from ..session.transcript import SessionStore

Submit = Callable[[Event], Awaitable[None]]

HookEvent = Literal[
    "gateway:start",
    "gateway:stop",
    "message:received",
    "message:sending",
    "message:sent",
    "session:new",
    "session:reset",
    "compaction:before",
    "compaction:after",
    "tool:before",
    "tool:after",
    "turn:done",
    "cron:fired",
    "subagent:done",
]
EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)
VERSION = 1
"""The payloads' version: raised when a field changes meaning or goes away (adding one does not)."""

Action = Literal["allow", "deny", "ask", "drop", "cancel"]
ACTIONS: dict[HookEvent, tuple[Action, ...]] = {
    "tool:before": ("allow", "deny", "ask"),
    "message:received": ("drop",),
    "message:sending": ("cancel",),
}
"""The actions each event takes; every other event only observes (and `text` where docs/hooks.md says)."""
TEXT_EVENTS: frozenset[HookEvent] = frozenset(
    {"message:received", "message:sending", "session:new", "session:reset", "tool:after"}
)
"""Where an answer's `text` goes somewhere: the message, the reply, the command's reply, the tool's result."""


class AnswerError(ValueError):
    """A hook's answer that is not one of the documented forms; the message says what was wrong."""


@dataclass(frozen=True)
class Answer:
    """What one hook said back: nothing (None fields), an action with its reason, new `text`, new `arguments`."""

    action: Action | None = None
    reason: str = ""
    text: str | None = None
    arguments: dict[str, Any] | None = None

    @classmethod
    def read(cls, event: HookEvent, raw: object) -> Answer:
        """The answer to `event` in `raw` (a decoded JSON value, None for no output); AnswerError when malformed."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise AnswerError(f"the answer is a JSON {type(raw).__name__}, not an object")
        fields = cast(dict[str, object], raw)
        if unknown := sorted(set(fields) - {"action", "reason", "text", "arguments"}):
            raise AnswerError(f"unknown answer field {unknown[0]!r} (action, reason, text, arguments)")
        action, reason = fields.get("action"), fields.get("reason", "")
        text, arguments = fields.get("text"), fields.get("arguments")
        allowed = ACTIONS.get(event, ())
        if action is not None and action not in allowed:
            hint = ", ".join(allowed) or "none: it only observes"
            raise AnswerError(f"action {action!r} does not apply to {event} (its actions: {hint})")
        if not isinstance(reason, str) or (text is not None and not isinstance(text, str)):
            raise AnswerError("reason and text must be strings")
        if text is not None and event not in TEXT_EVENTS:
            raise AnswerError(f"text does not apply to {event}")
        if arguments is not None and (event != "tool:before" or not isinstance(arguments, dict)):
            raise AnswerError("arguments must be an object, and only tool:before rewrites them")
        return cls(action, reason, text, cast(dict[str, Any] | None, arguments))


def principal(who: Principal) -> dict[str, Any]:
    return {"kind": who.kind, "rights": who.rights, "label": who.label, "user": who.user}


def target(where: Target) -> dict[str, Any]:
    return {"channel": where.channel, "conversation": where.conversation, "user": where.user}


def about(event: Event) -> dict[str, Any]:
    """The fields every payload about an event shares: its kind, session, who it is from and where it answers."""
    return {
        "kind": event.kind,
        "session": event.session_key,
        "principal": principal(event.principal),
        **target(event.target),
        "text": event.text,
    }


@dataclass(frozen=True)
class HookContext:
    """What a Python hook may use besides its payload: the home's folders, its own options from config, the
    sessions (the capture hook reads the one ending), and `submit` to start a turn (`boot`), set once `run` has a
    gateway (None elsewhere)."""

    home: Path
    workspace: Path
    state: Path
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    sessions: SessionStore | None = None
    submit: Submit | None = None
    now: Callable[[], dt.datetime] = field(default=lambda: dt.datetime.now().astimezone())
