"""Channels for host tests: one that drops everything, one that records what it is sent, one that answers the agent's
questions like a user."""

from __future__ import annotations

import anyio

from hermitcrab.host.config import Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.providers import Provider
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent


class SilentChannel:
    name = "test"

    async def send(self, target: Target, text: str) -> None:
        return None

    async def typing(self, target: Target) -> None:
        return None


class RecordingChannel:
    """Records what it is sent; `next_message` waits for the next one."""

    name = "test"

    def __init__(self) -> None:
        self.sent: list[tuple[Target, str]] = []
        self.new_message = anyio.Event()

    async def send(self, target: Target, text: str) -> None:
        self.sent.append((target, text))
        self.new_message.set()
        self.new_message = anyio.Event()

    async def typing(self, target: Target) -> None:
        return None

    async def next_message(self) -> str:
        with anyio.fail_after(5):
            await self.new_message.wait()
        return self.sent[-1][1]


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
            await self.gateway.submit(Event("message", self.answer, target, principal=OWNER))

    async def typing(self, target: Target) -> None:
        return None


async def run_turn_with_servers(
    settings: Settings, provider: Provider, channel: AnsweringChannel, event: Event
) -> None:
    """One turn through a real pool and gateway, with `channel` answering the questions it is sent."""
    async with McpPool(settings.servers) as pool:
        agent = Agent(settings, provider, pool, SessionStore(settings.home / "sessions"))
        channel.gateway = Gateway(agent, {channel.name: channel}, ask_timeout_s=10)
        await channel.gateway.process(event)
