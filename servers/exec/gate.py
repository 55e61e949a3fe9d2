"""The approval gate in front of `exec`: the verdict first (from the check worker, for the ask mode in force),
then (if needed) the user's answer.

`Gate.resolve` is the `Resolve(...)` resolver of the exec tool's `approval` parameter, so the SDK runs it before
the tool body on every protocol version. `Gate.decide` turns whatever it produced into what may run (`Approved`:
where, and which folders outside the roots an answered on-leave question opened) or a ToolError.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from hermitcrab.servers._common.arguments import quote

from . import approvals
from .approvals import ApprovalForm, ApprovalStore, Deadlines, OnceForm, Ruling
from .checking import CheckWorker
from .files import Files
from .leaving import widened
from .policy import Ask, Policy, Verdict
from .tiers import RiskTiers

_MAX_CHECKED = 256


def effective_ask(ask: Ask, sandboxed: bool) -> Ask:
    """The ask mode in force: on-leave needs the sandbox, so without it the fail-closed parser asks (on-miss)."""
    return "on-miss" if ask == "on-leave" and not sandboxed else ask


_ASKING = {
    "on-leave": "A command that stays in the workspace runs without asking, even one off the allowlist; writing "
    "outside it is asked, and persona, memory and git config files are refused.",
    "on-change": "A command that changes files or settings, or is off the allowlist, needs the user's approval.",
    "on-miss": "A command off the allowlist needs the user's approval.",
    "always": "Every command needs the user's approval.",
    "off": "A command off the allowlist is refused.",
}


def asking_note(ask: Ask) -> str:
    """What the exec tool's description says is asked, for the mode in force."""
    return " " + _ASKING[ask]


@dataclass(frozen=True)
class Approved:
    """What `Gate.decide` lets run: where, a note when an approval was remembered, and the folders outside the
    roots an approved on-leave question makes writable for this call."""

    directory: Path
    note: str | None = None
    writable: tuple[Path, ...] = ()


class Gate:
    def __init__(
        self,
        policy: Policy,
        worker: CheckWorker,
        store: ApprovalStore,
        files: Files,
        running: Callable[[], list[str]] = list,
    ) -> None:
        self.policy = policy
        self.ask = worker.judge.ask  # the effective mode (effective_ask)
        self.worker = worker
        self.store = store
        self.files = files
        self.running = running  # command lines still running: a `git checkout` there may be making symlinks
        self.deadlines = Deadlines()
        # question key -> (workdir, verdict) from `resolve`, reused by `decide` in the same call: the command runs
        # in the directory the policy checked, and allow-always remembers what the user was shown.
        self._checked: dict[str, tuple[Path, Verdict]] = {}

    def workdir(self, workdir: str | None) -> Path:
        path = self.files.resolve(workdir or ".")
        if not path.is_dir():
            raise ToolError(
                f"workdir {quote(workdir or '.')} is not a directory; pass a directory inside the workspace."
            )
        return path

    async def verdict(self, command: str, workdir: Path, env: Mapping[str, str] | None) -> Verdict:
        return await self.worker.verdict(command, workdir, env, self.store.binaries, self.running())

    async def resolve(
        self, command: str, workdir: str | None, env: dict[str, str] | None, ctx: Context[Any, Any]
    ) -> Ruling | BaseModel | Elicit[Any]:
        """Decide without asking when possible; otherwise ask the user (see approvals.ask)."""
        if self.policy.security == "deny":
            return Ruling(decision="refused", reason="exec is disabled on this server (--security deny)")
        try:
            directory = self.workdir(workdir)
        except ToolError as exc:
            return Ruling(decision="refused", reason=str(exc).removeprefix("Refused: "))
        verdict = await self.verdict(command, directory, env)
        key = approvals.question_key(command, workdir, env)
        self._checked.pop(key, None)
        self._checked[key] = (directory, verdict)
        while len(self._checked) > _MAX_CHECKED:  # calls whose answer never came back
            del self._checked[next(iter(self._checked))]
        if verdict.refusal is not None:
            named = "`" in verdict.refusal  # the policy already quoted the offending segment
            reason = verdict.refusal if named else f"`{_short(command)}`: {verdict.refusal}"
            return Ruling(decision="refused", reason=_clipped(reason) + ".")
        always = self.ask == "always" or RiskTiers.every_time(verdict) or bool(widened(verdict))
        if not always and (verdict.allowed or command in self.store.commands):
            return Ruling(decision="allowed")
        if self.ask == "off":
            return Ruling(decision="refused", reason=_clipped(_miss_sentence(verdict)))
        if widened(verdict) and not approvals.can_elicit(ctx):
            reason = _leaves_sentence(verdict, "this MCP host cannot ask the user (no elicitation support)")
            return Ruling(decision="refused", reason=_clipped(reason))
        message = approvals.approval_message(command, str(directory), verdict, always)
        form = OnceForm if always else ApprovalForm
        return await approvals.ask(ctx, message, form, key, self.deadlines, self.policy.approval_timeout_s)

    async def decide(
        self, outcome: ElicitationResult[Any], command: str, workdir: str | None, env: Mapping[str, str] | None
    ) -> Approved:
        """What may run, or raise a ToolError."""
        key = approvals.question_key(command, workdir, env)
        self.deadlines.forget(key)
        checked = self._checked.pop(key, None)
        if not isinstance(outcome, AcceptedElicitation):
            outcome = AcceptedElicitation(data=Ruling(decision="declined", reason=outcome.action))
        data = outcome.data
        if isinstance(data, Ruling):
            self._ruling(data, command)
        elif not isinstance(data, ApprovalForm | OnceForm):
            raise ToolError("Refused: the approval answer could not be understood.")
        elif data.decision == "deny":
            raise ToolError(f"Refused: the user denied `{_short(command)}`; do not retry it, ask what they want.")
        directory = checked[0] if checked is not None else self.workdir(workdir)
        if isinstance(data, Ruling):  # allowed without a question: nothing to widen
            return Approved(directory)
        verdict = checked[1] if checked is not None else await self.verdict(command, directory, env)
        if isinstance(data, ApprovalForm) and data.decision == "allow-always":
            return Approved(directory, "Approved always: " + self.store.remember(verdict, command) + ".")
        return Approved(directory, writable=tuple(widened(verdict)))

    def _ruling(self, ruling: Ruling, command: str) -> None:
        if ruling.decision == "allowed":
            return None
        if ruling.decision == "timed-out":
            seconds = round(self.policy.approval_timeout_s)
            raise ToolError(f"Refused: nobody approved `{_short(command)}` within {seconds} s; ask the user first.")
        if ruling.decision == "declined":
            raise ToolError(f"Refused: the user did not approve `{_short(command)}` ({ruling.reason}).")
        if ruling.decision == "ask-unavailable":
            raise ToolError(
                f"Refused: `{_short(command)}` needs approval but this MCP host cannot ask the user "
                "(no elicitation support); the user can allow it with --allow NAME."
            )
        raise ToolError(f"Refused: {ruling.reason}")


def _short(command: str, limit: int = 200) -> str:
    command = command.strip()
    return command if len(command) <= limit else command[:limit] + "..."


def _clipped(reason: str, limit: int = 200) -> str:
    """A refusal with each over-long word (a command name can be megabytes) cut to about `limit` characters."""
    return re.sub(rf"\S{{{limit + 1},}}", lambda word: f"{word[0][:limit]}... ({len(word[0]):,} characters)", reason)


def _miss_sentence(verdict: Verdict) -> str:
    if widened(verdict):
        return _leaves_sentence(verdict, "nothing is asked on this server (--ask off)")
    shown = "; ".join(f"`{_short(m.command, 80)}`: {m.reason}" for m in verdict.misses[:3])
    more = f" (and {len(verdict.misses) - 3} more)" if len(verdict.misses) > 3 else ""
    return f"{shown}{more}. Use allowed commands, or the user can allow it with --allow NAME."


def _leaves_sentence(verdict: Verdict, why_unasked: str) -> str:
    reasons = "; ".join(miss.reason for miss in verdict.misses[:3])
    return f"{reasons}. Leaving the workspace needs the user's approval and {why_unasked}; write inside the workspace."
