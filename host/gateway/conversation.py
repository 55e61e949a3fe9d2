"""The conversation one turn's host tools see: ask this event's person, send here or to another conversation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..events import Question, Target
from ..turn.stream import TurnStream
from .outbox import Outbox
from .questions import Questions


class BoundConversation:
    """A turn's view of where it came from: questions go to its person, messages to its conversation by default."""

    def __init__(self, outbox: Outbox, questions: Questions, target: Target, stream: TurnStream | None = None) -> None:
        self.outbox = outbox
        self.questions = questions
        self.target = target
        self.stream = stream or TurnStream()

    async def ask(self, question: str, choices: Sequence[str] | None = None) -> str | None:
        self.stream.emit(Question(question))
        return await self.questions.ask(self.target, question, choices)

    def target_problem(self, channel: str, to: str) -> str | None:
        """Why a later delivery to (channel, to) would fail, as far as this process can tell: a channel that does
        not run here (a job made in `chat` for Discord) may well run in `hermitcrab run`."""
        if channel not in self.outbox.channels:
            return None
        return self.outbox.target_problem(channel, to)

    async def send(self, text: str, channel: str | None = None, to: str | None = None) -> None:
        """A message on the way, not the turn's reply: it never answers the triggering message, so a channel that
        drafts the reply (Discord) keeps the draft for the reply itself."""
        target = replace(self.target, reply_to=None)
        if (channel or target.channel, to or target.conversation) != (target.channel, target.conversation):
            target = Target(channel or target.channel, to or target.conversation)
            problem = self.outbox.target_problem(target.channel, target.conversation)
            if problem is not None:
                raise ValueError(problem)
        await self.outbox.deliver(target, text)
