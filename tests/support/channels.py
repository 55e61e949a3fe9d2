"""Channels for host tests: one that drops everything, one that answers the agent's questions like a user."""

from __future__ import annotations

from hermitcrab.host.events import Event, Target
from hermitcrab.host.gateway import Gateway


class SilentChannel:
    name = "test"

    async def send(self, target: Target, text: str) -> None:
        return None

    async def typing(self, target: Target) -> None:
        return None


class AnsweringChannel:
    """Records what it is sent and answers any message containing `trigger` with `answer`, through the gateway."""

    name = "test"

    def __init__(self, answer: str, trigger: str = "server asks:") -> None:
        self.answer = answer
        self.trigger = trigger
        self.sent: list[str] = []
        self.gateway: Gateway | None = None

    async def send(self, target: Target, text: str) -> None:
        self.sent.append(text)
        if self.trigger in text and self.gateway is not None:
            await self.gateway.submit(Event("message", self.answer, target))

    async def typing(self, target: Target) -> None:
        return None
