"""Keeping a turn inside the model's window: count the context, flush memory, compact, and never loop.

Counting uses the provider's own count of the last call plus an estimate of what was added since. Near the limit
a memory flush runs once per compaction cycle, always before the compaction that follows it (at the threshold,
on `/compact`, or after a context-overflow error).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config import AgentSettings
from ..errors import ContextOverflowError
from ..events import Compaction
from ..hooks.dispatch import Hooks
from ..providers.base import Message, Provider, ToolSpec
from ..session.transcript import MESSAGE_OVERHEAD_CHARS, SUMMARY_HEADER, Session
from .compaction import CHARS_PER_TOKEN, Budget, Compacted, compact
from .flush import FlushTarget, flush
from .stream import TurnStream
from .tool_calls import Toolbox

logger = logging.getLogger(__name__)

FAILED_SUMMARY_NOTICE = (
    "(Note: I could not summarise the earlier part of this conversation ({failure}), so I kept a shortened copy "
    "of it instead. Nothing was deleted: the full history stays in the session's transcript.)"
)


@dataclass
class ContextKeeper:
    """One turn's guard of its context size; `notices` are what the user must be told once."""

    session: Session
    provider: Provider
    toolbox: Toolbox
    system: str
    settings: AgentSettings
    target: FlushTarget = field(default_factory=FlushTarget)
    stream: TurnStream = field(default_factory=TurnStream)
    """Told of each compaction (its sizes before and after)."""
    hooks: Hooks = field(default_factory=Hooks)
    """Told before and after each compaction (`compaction:before`, `compaction:after`)."""
    notices: list[str] = field(default_factory=list[str])
    _flush_tried: bool = False

    def __post_init__(self) -> None:
        self.budget = Budget.of(self.settings)

    def tokens(self, messages: Sequence[Message]) -> int:
        """The context's size: the provider's last count plus what came since, or else an estimate of it all (with
        the tool specs the toolbox has now: a server's own list replaces its cached one mid-turn on a lazy start)."""
        counted = self.session.transcript.view().context_tokens()
        if counted is not None:
            return counted
        fixed = len(self.system) + sum(map(spec_chars, self.toolbox.specs()))
        return (fixed + sum(map(message_chars, messages))) // CHARS_PER_TOKEN

    async def prepare(self, messages: list[Message]) -> list[Message]:
        """Before a model call: flush once near the limit, compact past it; the messages to send."""
        tokens = self.tokens(messages)
        if tokens >= self.budget.flush_at:
            await self._flush(messages)
        if tokens > self.budget.threshold and (await self._compact(required=False)).replaced:
            return self.session.messages()
        return messages

    async def recover(self, messages: list[Message]) -> list[Message]:
        """After a context-overflow error: flush on what fits, compact, and return the smaller view (or raise)."""
        await self._flush(fit(messages, self.budget.threshold * CHARS_PER_TOKEN // 2))
        if not (await self._compact(required=True)).replaced:
            raise ContextOverflowError("the latest messages alone are longer than the model's context window")
        return self.session.messages()

    async def compact_now(self) -> Compacted:
        """`/compact`: flush, then compact whatever is older than the recent part."""
        await self._flush(self.session.messages())
        return await self._compact(required=True)

    def annotate(self, reply: str) -> str:
        """The reply with this turn's notices, which are said once."""
        return "\n\n".join([reply, *self.notices]) if reply else "\n\n".join(self.notices)

    async def _flush(self, messages: Sequence[Message]) -> None:
        if not self.settings.memory_flush or self._flush_tried or self.session.transcript.view().flushed:
            return
        self._flush_tried = True
        await flush(
            self.session, self.provider, self.toolbox, self.system, messages, self.target, self.budget.timeout_s
        )

    async def _compact(self, *, required: bool) -> Compacted:
        before = sum(map(message_chars, self.session.messages()))
        told = {"session": self.session.key, "before_chars": before, "required": required}
        await self.hooks.fire("compaction:before", told)
        done = await compact(self.session, self.provider, self.budget, required=required)
        after = sum(map(message_chars, self.session.messages()))
        if done.replaced:
            self.stream.emit(Compaction(before, after))
        result = {"after_chars": after, "replaced": done.replaced, "failure": done.failure}
        await self.hooks.fire("compaction:after", {**told, **result})
        if done.failure:
            self.notices.append(FAILED_SUMMARY_NOTICE.format(failure=done.failure[:200]))
        return done


def spec_chars(spec: ToolSpec) -> int:
    """A tool's schema as counted towards the context: its name, description and parameters."""
    return len(spec.name) + len(spec.description) + len(json.dumps(spec.parameters))


def message_chars(message: Message) -> int:
    calls = sum(len(c.name) + len(json.dumps(c.arguments, ensure_ascii=False)) for c in message.tool_calls)
    pictures = sum(image.tokens for image in message.images) * CHARS_PER_TOKEN
    return len(message.content) + calls + pictures + MESSAGE_OVERHEAD_CHARS


def fit(messages: Sequence[Message], max_chars: int) -> list[Message]:
    """The newest messages within `max_chars`, starting at a user message, after the summary if there is one."""
    head = list(messages[:1]) if messages and messages[0].content.startswith(SUMMARY_HEADER) else []
    total = sum(map(message_chars, head))
    start = len(messages)
    for index in range(len(messages) - 1, len(head) - 1, -1):
        total += message_chars(messages[index])
        if total > max_chars:
            break
        if messages[index].role == "user":
            start = index
    return [*head, *messages[start:]]
