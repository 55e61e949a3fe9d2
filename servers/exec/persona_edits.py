"""The owner's approval for a file tool that changes a persona file (SOUL.md, USER.md, IDENTITY.md, ...).

What the model writes there it reads back next turn as its own instructions, so commands may never change those
files (the sandbox binds them read-only) and `write_file`/`edit_file` change one only when the owner says yes to
the exact change, shown in the question. The first-run ritual (BOOTSTRAP.md) is the usual reason to ask.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hermitcrab.util.text import escape_controls

from . import approvals
from .approvals import Deadlines, Ruling
from .files import Files

_SHOWN_CHARS = 1_500  # of the new text in the question; the rest is counted


class PersonaForm(BaseModel):
    """Allow or deny this change to a persona file."""

    decision: Literal["allow-once", "deny"] = Field(
        title="Decision", description="allow-once makes this one change; deny refuses it."
    )


class PersonaEdits:
    """The resolvers of write_file's and edit_file's `approval` parameter, and the decision the tools act on."""

    def __init__(self, files: Files, timeout_s: float) -> None:
        self.files = files
        self.timeout_s = timeout_s
        self.deadlines = Deadlines()

    async def resolve_write(self, path: str, content: str, ctx: Context[Any, Any]) -> Ruling | BaseModel | Elicit[Any]:
        return await self._ask(path, written(content), ctx)

    async def resolve_edit(
        self, path: str, old_text: str, new_text: str, ctx: Context[Any, Any]
    ) -> Ruling | BaseModel | Elicit[Any]:
        return await self._ask(path, edited(old_text, new_text), ctx)

    async def _ask(self, path: str, change: str, ctx: Context[Any, Any]) -> Ruling | BaseModel | Elicit[Any]:
        real = self.files.persona_file(path)
        if real is None:
            return Ruling(decision="allowed")  # not a persona file: the tool's own rules apply
        message = "\n".join(
            [
                f"The assistant wants to change {real.name}, one of its persona files (it reads them as its own "
                "instructions every turn).",
                "",
                change,
            ]
        )
        return await approvals.ask(ctx, message, PersonaForm, _key(path, change), self.deadlines, self.timeout_s)

    def approved(self, outcome: ElicitationResult[Any], path: str, change: str) -> bool:
        """True when the owner allowed `change` (`written` or `edited`) to a persona file, False when `path` is
        not one; a ToolError when the change may not be made."""
        self.deadlines.forget(_key(path, change))
        if not isinstance(outcome, AcceptedElicitation):
            raise ToolError(f"Refused: the owner did not approve changing {path} ({outcome.action}).")
        data = outcome.data
        if isinstance(data, PersonaForm):
            if data.decision == "deny":
                raise ToolError(f"Refused: the owner denied this change to {path}; do not retry it, ask them.")
            return True
        if not isinstance(data, Ruling):
            raise ToolError("Refused: the approval answer could not be understood.")
        if data.decision == "allowed":
            return False
        if data.decision == "ask-unavailable":
            raise ToolError(
                f"Refused: changing the persona file {path} needs the owner's approval, and this MCP host cannot "
                "ask (no elicitation support); the owner can edit it themselves."
            )
        if data.decision == "timed-out":
            raise ToolError(f"Refused: nobody approved changing {path} within {round(self.timeout_s)} s.")
        raise ToolError(f"Refused: the owner did not approve changing {path} ({data.reason}).")


def written(content: str) -> str:
    """write_file's change, as the question shows it."""
    return f"Replace its whole content with:\n{_shown(content)}" if content else "Empty it."


def edited(old_text: str, new_text: str) -> str:
    """edit_file's change, as the question shows it."""
    return f"Replace:\n{_shown(old_text)}\nwith:\n{_shown(new_text)}"


def _shown(text: str) -> str:
    shown = escape_controls(text[:_SHOWN_CHARS])
    return shown + (f"\n[... {len(text) - _SHOWN_CHARS:,} more characters]" if len(text) > _SHOWN_CHARS else "")


def _key(path: str, change: str) -> str:
    return hashlib.sha256(f"{path}\0{change}".encode()).hexdigest()[:24]
