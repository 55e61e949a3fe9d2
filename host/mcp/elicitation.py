"""Server elicitations (exec approvals and other forms) put to the user of the conversation that called the tool.

Each field of the requested form is one question (`form.py` says what it accepts and reads the answer into the type
the schema asks for); a bad answer is asked again with what was wrong, a few times, and then the form is declined.

A server asks in one of two ways, depending on the protocol era of the connection. On a 2026-era one the question
comes back as part of the call's own result and is asked from the calling task, which carries the conversation
(`current_asker`). A server of the older era (most third-party ones) sends a request of its own in the middle of the
call, served by a task of the connection's: it does not say which call it belongs to, so it is put to the
conversation whose calls to that server are in flight (`ElicitationHandler.calling`), and declined when calls from
several conversations are, since guessing could show one person's approval to another.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from jsonschema.exceptions import SchemaError
from mcp import types
from mcp.client.context import ClientRequestContext

from hermitcrab.util.text import escape_controls

from .call_clock import CallClock, running_clock, waiting_on_user
from .form import Accepted, Ended, Field, Form, Rejected, Skipped, UnsupportedField, fence, shown

logger = logging.getLogger(__name__)

MAX_TRIES = 3
"""Answers taken for one field before the form is declined: a person mistyping gets two more tries, a stream of
unrelated messages does not keep a tool waiting."""

_GO_ON = Form({"type": "object", "properties": {"answer": {"enum": ["accept", "decline"]}}, "required": ["answer"]})
"""A form without fields, or an address to open, asks only whether to go on."""


class Asker(Protocol):
    """Puts a question to the user of the current conversation; None means no answer (timeout, no user).

    An empty string is an answer: the person pressed Enter (a field's default, or skipping an optional field)."""

    async def __call__(self, question: str, choices: Sequence[str] | None = None) -> str | None: ...


current_asker: contextvars.ContextVar[Asker | None] = contextvars.ContextVar("current_asker", default=None)


@dataclass(frozen=True, eq=False)
class _Call:
    """A tool call in flight: whom its questions go to, and the timeout they stop."""

    asker: Asker | None
    clock: CallClock | None


_serving: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("elicitation_call", default=None)


def quoted(server: str, message: str) -> str:
    """The server's text fenced as a code block, so it cannot pose as the host's own words or formatting, with its
    control characters escaped, so it cannot redraw the screen it is shown on (`escape_controls`)."""
    message = escape_controls(message)
    ticks = fence(message, 3)
    return f"The {server} server asks:\n{ticks}\n{message}\n{ticks}"


class ElicitationHandler:
    """The pool's `elicitation_callback` for one server: one question per form field, answers typed and checked.

    The timeout of the call a question is for is paused while the user is being asked (`call_clock`).
    """

    def __init__(self, server: str) -> None:
        self.server = server
        self._calls: list[_Call] = []

    @contextmanager
    def calling(self) -> Generator[None]:
        """Around each call to this server (inside its `call_clock`): the call's questions find their conversation."""
        call = _Call(current_asker.get(), running_clock())
        self._calls.append(call)
        token = _serving.set(call)
        try:
            yield
        finally:
            _serving.reset(token)
            self._calls.remove(call)

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        calls = self._asked_for()
        asker = calls[0].asker if calls else None
        if asker is None:
            return types.ElicitResult(action="decline")
        with waiting_on_user(call.clock for call in calls if call.clock is not None):
            if isinstance(params, types.ElicitRequestURLParams):
                return await self._ask_to_open(asker, params)
            return await self._ask(asker, params)

    def _asked_for(self) -> list[_Call]:
        """The calls a question may belong to: the one this task makes, else all in flight if they are one
        conversation's; none when they are several conversations' (or none are in flight)."""
        own = _serving.get()
        if own is not None:
            return [own]
        calls = list(self._calls)
        if calls and any(call.asker != calls[0].asker for call in calls):
            logger.warning(
                "declined a question of the %s server: calls from several conversations are in flight and its "
                "protocol era does not say which one it is for",
                self.server,
            )
            return []
        return calls

    async def _ask(self, asker: Asker, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        try:
            form = Form(params.requested_schema)
        except (SchemaError, UnsupportedField) as exc:
            reason = exc.message if isinstance(exc, SchemaError) else str(exc)  # not the whole metaschema path
            logger.warning("declined a form of the %s server nobody can fill in: %s", self.server, reason)
            return types.ElicitResult(action="decline")
        content: dict[str, Any] = {}  # an empty form accepted is an empty content, which the schema checks too
        if not form.fields:
            action = await self._go_on(asker, self._question(params.message, _GO_ON.fields[0], (1, 1)))
            if action != "accept":
                return types.ElicitResult(action=action)
        for index, field in enumerate(form.fields, 1):
            reading = await self._ask_field(
                asker, self._question(params.message, field, (index, len(form.fields))), field
            )
            if isinstance(reading, Ended):
                return types.ElicitResult(action=reading.action)
            if isinstance(reading, Accepted):
                content[field.key] = reading.value
        problem = form.problem(content)
        if problem is not None:
            logger.warning("declined a form of the %s server its own schema refuses: %s", self.server, problem)
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)

    async def _ask_to_open(self, asker: Asker, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        """A URL-mode elicitation: the person is shown the whole address and its host (never fetched, never opened
        for them) and says whether they will open it; `accept` tells the server they consented, nothing more."""
        address = urlsplit(params.url)
        if address.scheme not in ("http", "https") or not address.hostname:
            logger.warning("declined the %s server's request to open an address that is no web page", self.server)
            return types.ElicitResult(action="decline")
        question = (
            f"{quoted(self.server, params.message)}\nIt asks you to open this address in your browser yourself, on "
            f"{shown(_ascii_host(address.hostname), whole=True)}:\n{shown(params.url, whole=True)}\n"
            f"{_GO_ON.fields[0].hint()}"
        )
        return types.ElicitResult(action=await self._go_on(asker, question))

    async def _go_on(self, asker: Asker, question: str) -> Literal["accept", "decline", "cancel"]:
        reading = await self._ask_field(asker, question, _GO_ON.fields[0])
        if isinstance(reading, Ended):
            return reading.action
        return "accept" if isinstance(reading, Accepted) and reading.value == "accept" else "decline"

    async def _ask_field(self, asker: Asker, question: str, field: Field) -> Accepted | Skipped | Ended:
        """Ask for one field until an answer fits, at most `MAX_TRIES` times; then the form is declined."""
        retry = ""
        for tries_left in reversed(range(MAX_TRIES)):
            answer = await asker(question + retry, field.choices())
            if answer is None:
                return Ended("cancel")
            reading = field.read(answer)
            if not isinstance(reading, Rejected):
                return reading
            retry = f"\nNot taken: {reading.reason} {tries_left} {'try' if tries_left == 1 else 'tries'} left."
        return Ended("decline")  # an answer that fits no choice is never taken as consent

    def _question(self, message: str, field: Field, place: tuple[int, int]) -> str:
        """The server's words fenced (its message, the field's title and description), then the host's hint.

        `place` is the field's number and the form's count of fields, named when there are several."""
        index, count = place
        if count > 1 or field.description is not None:
            heading = field.title + (f" ({index} of {count})" if count > 1 else "")
            message = f"{message}\n\n{heading}" + (f": {field.description}" if field.description else "")
        return f"{quoted(self.server, message)}\n{field.hint()}"


def _ascii_host(host: str) -> str:
    """A host as its ASCII (punycode) name, so a look-alike letter from another script shows (`xn--pple-43d.com`
    is not apple.com)."""
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host
