"""Where replies leave: the channels running in this process, and whether a conversation can be reached at all."""

from __future__ import annotations

from collections.abc import Mapping

from ..events import Channel, ChecksConversations, Target


class Outbox:
    """The running channels by name; every reply, question and note the gateway sends goes through `deliver`."""

    def __init__(self, channels: Mapping[str, Channel]) -> None:
        self.channels = dict(channels)

    def add(self, channel: Channel) -> None:
        self.channels[channel.name] = channel

    def target_problem(self, channel: str, to: str) -> str | None:
        """Why (channel, to) cannot be delivered to, in words naming the field; None when it can be tried."""
        found = self.channels.get(channel)
        if found is None:
            running = ", ".join(sorted(self.channels)) or "none"
            return f"delivery.channel: no channel named {channel[:40]!r} runs here (running: {running})"
        return found.check_conversation(to) if isinstance(found, ChecksConversations) else None

    async def deliver(self, target: Target, text: str) -> None:
        channel = self.channels.get(target.channel)
        if channel is None:
            raise LookupError(f"no channel named {target.channel!r}")
        await channel.send(target, text)
