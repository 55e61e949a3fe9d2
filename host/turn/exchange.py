"""The model-and-tools loop both a turn and the memory flush run: ask the model, run the tools it asks for, repeat.

Everything said is recorded in the session's transcript as it happens (with `marks` on each entry, e.g. the
flush's `flush: true`), so a crash mid-loop leaves a transcript a restart can read (`recovery.py`), and told to the
turn's stream: the answer's text as the model writes it (when someone listens), each message once done, each tool
call as it starts and finishes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ContextOverflowError, StreamCutError
from ..events import MessageDone
from ..providers.base import Completion, Message, Provider, ToolSpec, Usage
from ..providers.images import ImageBudget, RawImage
from ..session.transcript import Transcript
from ..text import cut_middle
from .images import Kept, keep
from .silence import Unsilenced
from .stream import TurnStream
from .tool_calls import Toolbox, run_tools

Refit = Callable[[list[Message]], Awaitable[list[Message]]]
"""Makes the conversation fit the model's window again (compaction); returns the messages to send instead."""


@dataclass
class Exchange:
    """One run of the loop, with its tally: the usage of every call, how many calls, the last context's size."""

    provider: Provider
    toolbox: Toolbox
    transcript: Transcript
    system: str
    max_calls: int
    max_result_chars: int
    stream: TurnStream = field(default_factory=TurnStream)
    prepare: Refit | None = None
    """Called before each model call (a turn compacts here when the context grows near the limit)."""
    recover: Refit | None = None
    """Called once when the provider says the context overflowed, before the call is tried again."""
    marks: dict[str, Any] = field(default_factory=dict[str, Any])
    images: ImageBudget | None = None
    """The budget tool results' images are fitted to (`images.py`); None: they are only stated in text."""
    usage: Usage = field(default_factory=Usage)
    answers: list[Completion] = field(default_factory=list[Completion])
    """Every answer, for what it cost: its model and provider price its usage (`turn/budget.py`)."""
    calls: int = 0

    def __post_init__(self) -> None:
        self._text = Unsilenced(self.stream)

    async def run(self, messages: list[Message]) -> str | None:
        """Loop until the model answers without tool calls; its answer, or None once `max_calls` were made.

        `messages` grows with what is said. A second overflow (after `recover`) is raised to the caller."""
        while self.calls < self.max_calls:
            self.calls += 1
            if self.prepare is not None:
                messages[:] = await self.prepare(messages)
            # asked each call: a server that started during the turn may list other tools than the cached ones
            completion = await self._complete(messages, self.toolbox.specs())
            self.usage = self.usage + completion.usage
            self.answers.append(completion)
            answer = completion.message
            self.transcript.append_answer(completion, **self.marks)
            messages.append(answer)
            self._text.end(answer.content)
            self.stream.emit(MessageDone(answer.content, len(answer.tool_calls)))
            if not answer.tool_calls:
                return answer.content
            for call in answer.tool_calls:
                self.transcript.append(
                    "tool_call", call_id=call.id, name=call.name, arguments=call.arguments, **self.marks
                )
            outcomes = await run_tools(self.toolbox, answer.tool_calls, self.stream)
            for call, outcome in zip(answer.tool_calls, outcomes, strict=True):
                kept = await self._kept(outcome.images)
                text = kept.text(cut_middle(outcome.text, self.max_result_chars, "the tool result was too long"))
                self.transcript.append(
                    "tool_result",
                    call_id=call.id,
                    name=call.name,
                    text=text,
                    is_error=outcome.is_error,
                    **kept.fields(),
                    **self.marks,
                )
                messages.append(
                    Message("tool", text, tool_call_id=call.id, is_error=outcome.is_error, images=kept.images)
                )
        return None

    async def _kept(self, raws: Sequence[RawImage]) -> Kept:
        if self.images is None:
            return Kept(tuple(f"[{raw.label}: {raw.media_type}, not shown in this turn]" for raw in raws))
        return await keep(raws, self.images, self.transcript.media)

    async def _complete(self, messages: list[Message], specs: list[ToolSpec]) -> Completion:
        """The model's next message; a stream broken off mid-answer ends the turn with what it said and a notice
        (its tool calls, if any, never complete), never with the answer asked for again."""
        try:
            return await self._call(messages, specs)
        except StreamCutError as cut:
            notice = f"\n\n({cut}; this answer is incomplete)"
            self._text.add(notice)
            return Completion(Message("assistant", cut.said + notice), provider=self.provider.label)

    async def _call(self, messages: list[Message], specs: list[ToolSpec]) -> Completion:
        on_delta = self._text.add if self.stream.listening else None
        try:
            return await self.provider.complete(self.system, messages, specs, on_delta)
        except ContextOverflowError:
            if self.recover is None:
                raise
            messages[:] = await self.recover(messages)
            return await self.provider.complete(self.system, messages, specs, on_delta)
