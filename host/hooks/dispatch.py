"""The ordered fan-out of one event to the hooks that handle it, and the safety rules around it.

Hooks run one after another, by priority then name, each seeing what the one before left (a rewritten text, new
arguments). A hook that fails or times out never breaks what fired it: it is logged, its error kept for
`hermitcrab hooks`, and skipped; only a `tool:before` hook that fails refuses the call, unless it declared
`on_error: allow`. An answer is data: only its `text` goes anywhere, and only where its event says.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hermitcrab.util.store import JsonFile

from ..config import Settings
from ..events import Event
from ..session.transcript import SessionStore
from ..text import shorten
from .catalog import ON_BY_DEFAULT, Broken, Hook, discover
from .events import Answer, HookContext, HookEvent, about
from .runner import HookFailed, run_hook

logger = logging.getLogger(__name__)

ERRORS_FILE = "errors.json"
APPROVE, REFUSE = "allow", "deny"


@dataclass(frozen=True)
class ToolDecision:
    """What the tool:before hooks made of a call: refused (with the sentence the model gets as its result), or to
    be made with `arguments`, after the owner approves when `approvals` name hooks asking for it."""

    arguments: dict[str, Any]
    refusal: str | None = None
    approvals: tuple[str, ...] = ()

    def question(self, tool: str) -> str:
        reasons = "\n".join(f"- {reason}" for reason in self.approvals)
        shown = shorten(json.dumps(self.arguments, ensure_ascii=False), 300)
        return f"A hook wants your approval before the tool call {tool} {shown}:\n{reasons}\nAllow it?"


@dataclass
class Hooks:
    """The enabled hooks of this home in the order they run, the hooks that failed to load, and the context Python
    hooks get. Empty (the default) fires nothing, so a part built without hooks behaves as before."""

    hooks: Sequence[Hook] = ()
    broken: Sequence[Broken] = ()
    context: HookContext = field(default_factory=lambda: HookContext(Path(), Path(), Path()))
    """What Python hooks get; the default is never used, since an empty Hooks runs nothing."""
    errors: JsonFile | None = None
    known: Sequence[Hook] = field(default=())
    """Every hook found, enabled or not (`hermitcrab hooks`)."""

    @classmethod
    def load(cls, settings: Settings, sessions: SessionStore | None = None) -> Hooks:
        """The hooks `settings` enable, with the owner's changes (`[hooks.<name>]`) applied."""
        found, broken = discover(settings.hook_dirs)
        switch = settings.hooks.switched_on
        chosen = [_configured(hook, settings) for hook in found if switch(hook.name, hook.name in ON_BY_DEFAULT)]
        for name in settings.hooks.enabled:
            if not any(hook.name == name for hook in found) and not any(b.name == name for b in broken):
                broken.append(Broken(name, "config.toml [hooks] enabled", "no hook of that name was found"))
        context = HookContext(settings.home, settings.workspace, settings.state, sessions=sessions)
        errors = JsonFile(settings.state / "hooks" / ERRORS_FILE)
        ordered = sorted(chosen, key=lambda hook: (hook.priority, hook.name))
        return cls(ordered, broken, context, errors, found)

    def on(self, event: HookEvent) -> list[Hook]:
        return [hook for hook in self.hooks if event in hook.events]

    def attach(self, **changes: Any) -> None:
        """Give Python hooks what exists only once `run` is wired (`submit`, the clock)."""
        self.context = replace(self.context, **changes)

    async def fire(self, event: HookEvent, fields: Mapping[str, Any]) -> list[Answer]:
        """Tell every hook of `event`; their answers, those that failed left out (logged)."""
        answers: list[Answer] = []
        for hook in self.on(event):
            answer = await self._run(hook, event, fields)
            if answer is not None:
                answers.append(answer)
        return answers

    async def received(self, event: Event) -> Event | None:
        """`message:received`: the message as the hooks leave it, None when one drops it."""
        for hook in self.on("message:received"):
            answer = await self._run(hook, "message:received", {**about(event), "attachments": len(event.attachments)})
            if answer is None:
                continue
            if answer.action == "drop":
                logger.info("hook %s dropped message %s: %s", hook.name, event.inbound_id, answer.reason or "-")
                return None
            if answer.text is not None:
                event = replace(event, text=answer.text)
        return event

    async def sending(self, fields: Mapping[str, Any]) -> str | None:
        """`message:sending`: the text to send as the hooks leave it, None when one cancels it."""
        text = str(fields["text"])
        for hook in self.on("message:sending"):
            answer = await self._run(hook, "message:sending", {**fields, "text": text})
            if answer is None:
                continue
            if answer.action == "cancel":
                logger.info("hook %s held a message to %s: %s", hook.name, fields.get("channel"), answer.reason or "-")
                return None
            if answer.text is not None:
                text = answer.text
        return text

    async def tool_before(self, fields: Mapping[str, Any]) -> ToolDecision:
        """`tool:before`: allow, refuse naming the hook, rewrite the arguments, or ask the owner first."""
        arguments: dict[str, Any] = dict(fields["arguments"])
        approvals: list[str] = []
        for hook in self.on("tool:before"):
            try:
                answer = await self._answer(hook, "tool:before", {**fields, "arguments": arguments})
            except HookFailed as exc:
                if hook.on_error == "deny":
                    return ToolDecision(arguments, f"the hook {hook.name} failed ({exc}), so the call was refused")
                continue
            if answer.action == "deny":
                return ToolDecision(arguments, f"the hook {hook.name} refused it: {answer.reason or 'no reason given'}")
            if answer.arguments is not None:
                arguments = answer.arguments
            if answer.action == "ask":
                approvals.append(f"{hook.name}: {answer.reason or 'no reason given'}")
        return ToolDecision(arguments, approvals=tuple(approvals))

    async def tool_after(self, fields: Mapping[str, Any]) -> str:
        """`tool:after`: the result text the model gets, as the hooks leave it."""
        current = dict(fields)
        for hook in self.on("tool:after"):
            answer = await self._run(hook, "tool:after", current)
            if answer is not None and answer.text is not None:
                current["result"] = answer.text
        return str(current["result"])

    async def _run(self, hook: Hook, event: HookEvent, fields: Mapping[str, Any]) -> Answer | None:
        try:
            return await self._answer(hook, event, fields)
        except HookFailed:
            return None

    async def _answer(self, hook: Hook, event: HookEvent, fields: Mapping[str, Any]) -> Answer:
        try:
            return await run_hook(hook, event, fields, self.context)
        except HookFailed as exc:
            logger.warning("hook %s failed on %s: %s", hook.name, event, exc)
            self._remember(hook, event, str(exc))
            raise

    def _remember(self, hook: Hook, event: HookEvent, error: str) -> None:
        """Keep the hook's last error where `hermitcrab hooks` (another process) reads it."""
        if self.errors is None:
            return
        try:
            known = self.errors.load("the hooks' last errors start again")
            at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            self.errors.save({**known, hook.name: {"at": at, "event": event, "error": error}})
        except OSError:
            logger.warning("could not record hook %s's error", hook.name, exc_info=True)


def _configured(hook: Hook, settings: Settings) -> Hook:
    entry = settings.hooks.each.get(hook.name)
    if entry is None:
        return hook
    return replace(
        hook,
        priority=hook.priority if entry.priority is None else entry.priority,
        timeout_s=hook.timeout_s if entry.timeout_s is None else entry.timeout_s,
        on_error=entry.on_error or hook.on_error,
        options={**hook.options, **entry.options},
    )


def last_errors(settings: Settings) -> dict[str, Any]:
    """Each hook's last failure as recorded by the host (`hermitcrab hooks`)."""
    return JsonFile(settings.state / "hooks" / ERRORS_FILE).load("no errors are shown")
