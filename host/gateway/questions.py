"""Questions a turn puts to a person: one on screen per conversation, answered by that person's next message.

A tool that needs a yes or a choice (an approval, an elicitation) waits here while the conversation's other
messages keep flowing: the gateway offers each incoming message to `Questions.answer` before queueing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from ..events import Asks, Event, Target
from .outbox import Outbox


@dataclass
class _Question:
    """A question on screen: only its user's next message in the conversation answers it; a question asked of
    nobody in particular (a cron job's or a webhook's approval) only an owner's."""

    user: str | None
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: str | None = None

    def accepts(self, event: Event) -> bool:
        if event.kind != "message":
            return False
        return event.principal.kind == "owner" if self.user is None else event.target.user == self.user


@dataclass
class _Asking:
    """A conversation's questions: the FIFO lock shows one at a time, in the order they were asked."""

    turn: anyio.Lock = field(default_factory=anyio.Lock)
    shown: _Question | None = None

    def answer(self, event: Event) -> bool:
        """Take `event` as the answer to the question on screen, if it is one."""
        if self.shown is None or not self.shown.accepts(event):
            return False
        self.settle(event.text)
        return True

    def settle(self, answer: str | None) -> None:
        """Answer the question on screen, if there is one, and take it off the screen."""
        question = self.shown
        if question is not None:
            self.shown = None
            question.answer = answer
            question.answered.set()


class Questions:
    """The questions of every conversation, each shown for at most `timeout_s` once its turn comes."""

    def __init__(self, outbox: Outbox, timeout_s: float) -> None:
        self.outbox = outbox
        self.timeout_s = timeout_s
        self._asking: dict[tuple[str, str], _Asking] = {}

    def answer(self, event: Event) -> bool:
        """Take `event` as the answer to its conversation's question on screen, if it is one."""
        asking = self._asking.get(_conversation(event.target))
        return asking is not None and asking.answer(event)

    def waiting(self, target: Target) -> bool:
        """Whether a question is on screen in this conversation."""
        asking = self._asking.get(_conversation(target))
        return asking is not None and asking.shown is not None

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Put a question to `target.user`; their next message in the conversation (or the channel's prompt) answers.

        Questions of one conversation queue up: each is shown once the one before it was answered or expired, and
        its timeout starts then. A channel with its own prompt (`Asks`, e.g. buttons) shows the question; a typed
        reply from the same user answers it too, and the prompt is then withdrawn (cancelled).
        """
        asking = self._asking.setdefault(_conversation(target), _Asking())
        channel = self.outbox.channels.get(target.channel)
        async with asking.turn:
            pending = _Question(target.user)
            asking.shown = pending
            try:
                with anyio.move_on_after(self.timeout_s):
                    async with anyio.create_task_group() as group:
                        if isinstance(channel, Asks):
                            group.start_soon(_prompt, channel, target, question, choices, asking)
                        else:
                            text = question if not choices else f"{question}\n" + "\n".join(f"  - {c}" for c in choices)
                            await self.outbox.deliver(target, text)
                        await pending.answered.wait()
                        group.cancel_scope.cancel()
            finally:
                if asking.shown is pending:
                    asking.shown = None
            return pending.answer


async def _prompt(channel: Asks, target: Target, question: str, choices: Sequence[str] | None, asking: _Asking) -> None:
    """The channel's own prompt answers the question on screen, unless a typed reply came first."""
    asking.settle(await channel.ask(target, question, choices))


def _conversation(target: Target) -> tuple[str, str]:
    return (target.channel, target.conversation)
