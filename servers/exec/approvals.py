"""Asking the user to approve a command (MCP elicitation) and remembering "allow always" answers.

The question is asked through the era-portable `Resolve(...)` resolver: on 2026-07-28 sessions the resolver returns
an `Elicit` marker, which the SDK turns into an input-required round trip; the deadline is enforced when the
client comes back. On older sessions (which keep a back-channel) the resolver sends the very same elicitation
itself, so it can stop waiting after the timeout. Either way no answer in time means deny.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from hermitcrab.util.store import JsonFile
from hermitcrab.util.text import escape_controls

from .policy import Verdict

logger = logging.getLogger(__name__)

Decision = Literal["allow-once", "allow-always", "deny"]
_INPUT_REQUIRED_VERSION = "2026-07-28"


class ApprovalForm(BaseModel):
    """Approve or deny this command."""

    decision: Decision = Field(
        title="Decision",
        description="allow-once runs it this time; allow-always also remembers it; deny refuses it.",
    )


class OnceForm(BaseModel):
    """Approve or deny this command."""

    # Offered under `--ask always`, where remembering an answer would make no difference.
    decision: Literal["allow-once", "deny"] = Field(
        title="Decision", description="allow-once runs it this time; deny refuses it."
    )


class Ruling(BaseModel):
    """What the gate decided without asking (or after a timeout)."""

    decision: Literal["allowed", "refused", "ask-unavailable", "timed-out", "declined"]
    reason: str = ""


class ApprovalStore:
    """approvals.json: binaries and exact command lines the user allowed always; written atomically and sealed
    with an HMAC whose key (approvals.key, mode 0600) only the server reads, so a file that anything else wrote
    or changed is ignored with a warning instead of trusted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = JsonFile(path)
        self.binaries: set[str] = set()
        self.commands: set[str] = set()
        self._key = _key(path.with_suffix(".key"))
        if path.exists():
            data = self._load()
            self.binaries = set(data.get("binaries", []))
            self.commands = set(data.get("commands", []))

    def _load(self) -> dict[str, Any]:
        try:
            data = self._file.read()
        except (OSError, ValueError) as exc:  # Torn is a ValueError
            logger.warning("%s is unreadable (%s); starting with no saved approvals", self.path, exc)
            return {}
        body = {k: v for k, v in data.items() if k != "mac"}
        if not hmac.compare_digest(str(data.get("mac", "")), _seal(self._key, body)):
            logger.warning("%s was not written by this server (its seal does not match); ignoring it", self.path)
            return {}
        return body

    def remember(self, verdict: Verdict, command: str) -> str:
        """Persist what makes `command` pass next time; returns a sentence saying what was remembered."""
        binaries = verdict.fixable_binaries
        if binaries is not None:
            self.binaries |= binaries
            remembered = "allowed from now on: " + ", ".join(sorted(binaries))
        else:
            self.commands.add(command)
            remembered = "this exact command is allowed from now on"
        body = {"binaries": sorted(self.binaries), "commands": sorted(self.commands)}
        self._file.save({**body, "mac": _seal(self._key, body)})
        return remembered


def _key(path: Path) -> bytes:
    """The sealing key, created on first use; a key that cannot be read means no saved approval is trusted."""
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        logger.warning("%s is unreadable (%s); saved approvals are not trusted", path, exc)
        return secrets.token_bytes(32)
    key = secrets.token_bytes(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another server on the same state created it first
        return _key(path)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex())
    return key


def _seal(key: bytes, body: dict[str, Any]) -> str:
    return hmac.new(key, json.dumps(body, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def approval_message(command: str, workdir: str, verdict: Verdict | None, always_ask: bool) -> str:
    """The text the user sees; it names the command and directory, so an answer cannot be reused for another.

    Any MCP host shows it, not only ours: the command's control characters and line breaks are written out, so it
    can neither redraw the question on a terminal nor add a line of its own ("Directory: ...") below it."""
    lines = [
        "The assistant wants to run a shell command.",
        "",
        f"Command: {one_line(command)}",
        f"Directory: {one_line(workdir)}",
    ]
    if verdict is not None and verdict.misses:
        lines.append("Needs approval because:")
        lines += [f"- {one_line(m.reason)}" for m in verdict.misses]
        binaries = verdict.fixable_binaries
        if always_ask:
            lines.append("Asked every time: the answer is not remembered.")
        elif binaries is not None:
            lines.append("Allow always adds to the allowlist: " + ", ".join(sorted(binaries)))
        else:
            lines.append("Allow always remembers this exact command.")
    elif always_ask:
        lines.append("Needs approval because every command is confirmed (--ask always).")
    return "\n".join(lines)


def one_line(text: str) -> str:
    """`text` on one line with its control characters written out, so it cannot pose as a line of the question."""
    return escape_controls(text).replace("\n", "\\n").replace("\t", "\\t")


class Deadlines:
    """When each pending question was first asked, so a late answer on a later round counts as no answer."""

    def __init__(self) -> None:
        self._asked: dict[str, float] = {}

    def expired(self, key: str, first_round: bool, timeout_s: float) -> bool:
        now = time.monotonic()
        for stale in [k for k, t in self._asked.items() if now - t > 10 * timeout_s]:
            del self._asked[stale]
        if first_round or key not in self._asked:
            self._asked[key] = now
            return False
        return now - self._asked[key] > timeout_s

    def forget(self, key: str) -> None:
        self._asked.pop(key, None)


def question_key(command: str, workdir: str | None, env: Mapping[str, str] | None) -> str:
    text = json.dumps([command, workdir, sorted((env or {}).items())])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def uses_input_required(ctx: Context[Any, Any]) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, _INPUT_REQUIRED_VERSION)


def can_elicit(ctx: Context[Any, Any]) -> bool:
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def ask(
    ctx: Context[Any, Any], message: str, form: type[BaseModel], key: str, deadlines: Deadlines, timeout_s: float
) -> Ruling | BaseModel | Elicit[Any]:
    """Ask the user: an Elicit marker on input-required sessions, a direct, time-limited elicitation otherwise."""
    if not can_elicit(ctx):
        return Ruling(decision="ask-unavailable")
    if uses_input_required(ctx):
        first_round = ctx.input_responses is None and ctx.request_state is None
        if deadlines.expired(key, first_round, timeout_s):
            deadlines.forget(key)
            return Ruling(decision="timed-out")
        return Elicit(message, form)
    outcome: ElicitationResult[Any] | None = None
    with anyio.move_on_after(timeout_s):
        try:
            outcome = await ctx.elicit(message, form)
        except ValueError:  # accepted, but with content that does not fit the form
            return Ruling(decision="declined", reason="an answer that does not fit the form")
    if outcome is None:
        return Ruling(decision="timed-out")
    if isinstance(outcome, AcceptedElicitation):
        data: BaseModel = outcome.data  # the validated form
        return data
    return Ruling(decision="declined", reason=outcome.action)
