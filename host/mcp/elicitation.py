"""Server elicitations (exec approvals and other forms) put to the user of the conversation that called the tool."""

from __future__ import annotations

import contextvars
import re
from collections.abc import Sequence
from typing import Any, Protocol

from mcp import types
from mcp.client.context import ClientRequestContext

from hermitcrab.util.text import escape_controls

from .call_clock import waiting_on_user

YES = frozenset({"yes", "y", "true"})


class Asker(Protocol):
    """Puts a question to the user of the current conversation; None means no answer (timeout, no user)."""

    async def __call__(self, question: str, choices: Sequence[str] | None = None) -> str | None: ...


current_asker: contextvars.ContextVar[Asker | None] = contextvars.ContextVar("current_asker", default=None)


def quoted(server: str, message: str) -> str:
    """The server's text fenced as a code block, so it cannot pose as the host's own words or formatting, with its
    control characters escaped, so it cannot redraw the screen it is shown on (`escape_controls`)."""
    message = escape_controls(message)
    longest = max((len(run) for run in re.findall(r"`+", message)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"The {server} server asks:\n{fence}\n{message}\n{fence}"


def pick(answer: str, choices: Sequence[str]) -> str | None:
    """Match a typed answer to a choice: exactly, by a unique prefix, or by its number (1-based); else None."""
    typed = answer.strip().lower()
    if typed.isdigit() and 1 <= int(typed) <= len(choices):
        return choices[int(typed) - 1]
    exact = [c for c in choices if c.lower() == typed]
    prefixed = [c for c in choices if typed and c.lower().startswith(typed)]
    return exact[0] if exact else prefixed[0] if len(prefixed) == 1 else None


class ElicitationHandler:
    """The pool's `elicitation_callback` for one server: one question per form field, answers checked.

    The calling tool's timeout is paused while the user is being asked (`call_clock`).
    """

    def __init__(self, server: str) -> None:
        self.server = server

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        asker = current_asker.get()
        if asker is None or not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        with waiting_on_user():
            return await self._ask(asker, params)

    async def _ask(self, asker: Asker, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        properties: dict[str, Any] = dict(params.requested_schema.get("properties") or {})
        if not properties:
            answer = await asker(quoted(self.server, params.message), ["accept", "decline"])
            return types.ElicitResult(action="accept" if answer and pick(answer, ["accept"]) else "decline")
        content: dict[str, Any] = {}
        for key, schema in properties.items():
            field: dict[str, Any] = dict(schema)
            boolean = field.get("type") == "boolean"
            choices: list[str] | None = ["yes", "no"] if boolean else field.get("enum")
            label = "" if len(properties) == 1 else f"\n{escape_controls(str(field.get('title') or key))}"
            answer = await asker(quoted(self.server, params.message) + label, choices)
            if answer is None:
                return types.ElicitResult(action="cancel")
            value = pick(answer, choices) if choices else answer
            if value is None:
                return types.ElicitResult(action="decline")  # an answer that fits no choice is never taken as consent
            content[key] = value in YES if boolean else value
        return types.ElicitResult(action="accept", content=content)
