"""The host's built-in tools: `ask_user` and `message`, which act on the conversation itself, and `skill`, which
reads the host's own prompt material (skill_tool.py says why it cannot live in a server)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Protocol, cast

from ..events import Event
from ..hooks.dispatch import APPROVE, REFUSE, Hooks, ToolDecision
from ..hooks.events import about
from ..mcp.elicitation import current_asker
from ..mcp.pool import McpPool, ToolOutcome
from ..providers.base import ToolSpec
from ..skills.catalog import Catalog
from ..skills.tool import SKILL
from ..skills.tool import read as read_skill
from ..trust.origin import caller_meta
from ..trust.policy import HOST_SERVER, ToolPolicy, refusal
from ..trust.untrusted import fence

ASK_USER = ToolSpec(
    "ask_user",
    "Ask the user a question and wait for the answer. When a decision depends on something you do not know "
    "(which file, which account, how far to go), ask instead of guessing; not for small talk. Returns the "
    "user's answer, or says that none came in time.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question, self-contained."},
            "choices": {"type": "array", "items": {"type": "string"}, "description": "Optional answers to offer."},
        },
        "required": ["question"],
    },
)
MESSAGE = ToolSpec(
    "message",
    "Send a message to the user right now, before the turn ends (progress on long work, or a note to another "
    "conversation). The final reply is delivered anyway: do not repeat it here.",
    {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The message to send."},
            "channel": {"type": "string", "description": "Channel name; defaults to the current one."},
            "to": {"type": "string", "description": "Conversation id in that channel; defaults to the current one."},
        },
        "required": ["text"],
    },
)


class Conversation(Protocol):
    """The conversation a turn belongs to, as the gateway exposes it to tools."""

    async def ask(self, question: str, choices: Sequence[str] | None = None) -> str | None: ...

    async def send(self, text: str, channel: str | None = None, to: str | None = None) -> None: ...

    def target_problem(self, channel: str, to: str) -> str | None:
        """Why a later delivery to (channel, to) would fail, as far as this process can tell; None when it may not."""
        ...


class HostToolbox:
    """MCP tools from the pool plus `ask_user` and `message` (and `skill` when there are skills), bound to one
    event's conversation, session and principal, and cut to the principal's tool policy."""

    def __init__(
        self,
        pool: McpPool | None,
        conversation: Conversation,
        event: Event,
        skills: Catalog | None = None,
        policy: ToolPolicy | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.pool = pool
        self.conversation = conversation
        self.event = event
        self.session_key = event.session_key
        self.skills = skills or Catalog()
        self.policy = policy or ToolPolicy()
        self.hooks = hooks or Hooks()

    def specs(self) -> list[ToolSpec]:
        mcp_specs = self.pool.tool_specs() if self.pool else []
        own = [ASK_USER, MESSAGE, *([SKILL] if self.skills.skills else [])]
        offered = [*(spec for spec in mcp_specs if spec.name not in {s.name for s in own}), *own]
        return [spec for spec in offered if self._allowed(spec.name)]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """The call as the policy and the tool:before hooks allow it, its result as the tool:after hooks leave it."""
        if not self._allowed(name):
            return ToolOutcome(refusal(name, self.event.principal.rights), True)
        fields = self._hook_fields(name, arguments)
        return await hooked_call(self.hooks, fields, partial(self._call, name), self._approval_refused)

    def _hook_fields(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        server = self.pool.server_of(name) if self.pool is not None else None
        return {**about(self.event), "tool": name, "server": server or HOST_SERVER, "arguments": arguments}

    async def _approval_refused(self, name: str, decision: ToolDecision) -> str | None:
        """None when the owner gave the approval hooks asked for; else why the call is not made. Only the owner
        approves: a turn without the owner's rights would ask someone else, so it is refused instead."""
        if not self.event.principal.is_owner:
            return "a hook requires the owner's approval, which a turn without the owner's rights cannot ask for"
        answer = await self._ask_naming_origin(decision.question(name), [APPROVE, REFUSE])
        if answer is not None and answer.strip().lower() == APPROVE:
            return None
        return "a hook required the owner's approval, and it was not given"

    async def _call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name == SKILL.name and self.skills.skills:
            return read_skill(self.skills, arguments)
        if name == ASK_USER.name:
            return await self._ask_user(arguments)
        if name == MESSAGE.name:
            return await self._message(arguments)
        if self.pool is None:
            return ToolOutcome(f"unknown tool {name!r}", True)
        problem = self._delivery_problem(arguments)
        if problem is not None:
            return ToolOutcome(f"{name} was not called: {problem}", True)
        token = current_asker.set(self._ask_naming_origin)
        try:
            meta = caller_meta(self.event.principal, self.session_key, self.event.target)
            outcome = await self.pool.call(name, arguments, self.session_key, meta)
        finally:
            current_asker.reset(token)
        if outcome.untrusted:
            server = self.pool.server_of(name) or "a"
            fenced = fence(outcome.text, f"the {server} server, which marked it as others' content")
            return ToolOutcome(fenced, images=outcome.images)
        return outcome

    def _delivery_problem(self, arguments: dict[str, Any]) -> str | None:
        """A `delivery` of the server-event contract in the arguments (a cron job's) that no channel here can take,
        caught when the job is made rather than each time it fires."""
        for where, delivery in _deliveries(arguments):
            channel, to = delivery.get("channel"), delivery.get("to")
            if isinstance(channel, str) and isinstance(to, str):
                problem = self.conversation.target_problem(channel, to)
                if problem is not None:
                    return f"{where}{problem}"
        return None

    def _allowed(self, name: str) -> bool:
        own = name in (ASK_USER.name, MESSAGE.name, SKILL.name)
        server = HOST_SERVER if own or self.pool is None else self.pool.server_of(name) or ""
        return self.policy.allows(name, server)

    async def _ask_naming_origin(self, question: str, choices: Sequence[str] | None = None) -> str | None:
        """A server's question (an exec approval) headed by whom and which session the call is for."""
        event = self.event
        return await self.conversation.ask(
            f"For {event.principal.label}, in session {event.session_key!r}:\n{question}", choices
        )

    async def _ask_user(self, arguments: dict[str, Any]) -> ToolOutcome:
        question = arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            return ToolOutcome("ask_user needs a non-empty 'question' string", True)
        choices = arguments.get("choices")
        offered = [str(choice) for choice in cast(list[object], choices)] if isinstance(choices, list) else None
        answer = await self.conversation.ask(question, offered)
        if answer is None:
            return ToolOutcome("The user did not answer (timed out or no one can be asked here).", True)
        return ToolOutcome(answer)

    async def _message(self, arguments: dict[str, Any]) -> ToolOutcome:
        text = arguments.get("text")
        if not isinstance(text, str) or not text.strip():
            return ToolOutcome("message needs a non-empty 'text' string", True)
        channel, to = arguments.get("channel"), arguments.get("to")
        here = self.event.target
        elsewhere = (channel or here.channel, to or here.conversation) != (here.channel, here.conversation)
        if elsewhere and not self.event.principal.is_owner:
            return ToolOutcome(
                "message can only answer this conversation here: sending to another one is for the owner's "
                "conversations alone.",
                True,
            )
        await self.conversation.send(text, channel, to)
        return ToolOutcome("sent")


Approve = Callable[[str, ToolDecision], Awaitable[str | None]]
"""Asks for the approvals a decision names: None when given, else why the call is not made."""


async def hooked_call(
    hooks: Hooks, fields: dict[str, Any], run: Callable[[dict[str, Any]], Awaitable[ToolOutcome]], approve: Approve
) -> ToolOutcome:
    """`run` with the arguments the tool:before hooks leave (or their refusal as the result), its result as the
    tool:after hooks leave it: the one gate of every tool call a turn or a sub-agent makes."""
    name = str(fields["tool"])
    arguments: dict[str, Any] = dict(fields["arguments"])
    if hooks.on("tool:before"):
        decision = await hooks.tool_before(fields)
        refused = decision.refusal or (await approve(name, decision) if decision.approvals else None)
        if refused is not None:
            return ToolOutcome(f"{name} was not called: {refused}", True)
        arguments = decision.arguments
    outcome = await run(arguments)
    if hooks.on("tool:after"):
        after = {**fields, "arguments": arguments, "result": outcome.text, "is_error": outcome.is_error}
        outcome = replace(outcome, text=await hooks.tool_after(after))
    return outcome


def _deliveries(value: object, where: str = "", depth: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """Every `delivery` object in a tool's arguments with the path to it (`job.`), a few levels deep."""
    if depth > 4 or not isinstance(value, dict):
        return []
    found: list[tuple[str, dict[str, Any]]] = []
    for key, inner in cast(dict[str, object], value).items():
        if key == "delivery" and isinstance(inner, dict):
            found.append((where, cast(dict[str, Any], inner)))
        else:
            found.extend(_deliveries(inner, f"{where}{key}.", depth + 1))
    return found
