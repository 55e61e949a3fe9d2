"""Where replies leave: the channels running in this process, and whether a conversation can be reached at all."""

from __future__ import annotations

from collections.abc import Mapping

from ..events import Channel, ChecksConversations, Event, Target
from ..hooks.dispatch import Hooks
from ..hooks.events import principal
from ..hooks.events import target as target_fields


class Outbox:
    """The running channels by name; every reply, question and note the gateway sends goes through `deliver`, past
    the `message:sending` hooks (which may rewrite or hold it) and then the `message:sent` ones."""

    def __init__(self, channels: Mapping[str, Channel], hooks: Hooks | None = None) -> None:
        self.channels = dict(channels)
        self.hooks = hooks or Hooks()

    def add(self, channel: Channel) -> None:
        self.channels[channel.name] = channel

    def target_problem(self, channel: str, to: str) -> str | None:
        """Why (channel, to) cannot be delivered to, in words naming the field; None when it can be tried."""
        found = self.channels.get(channel)
        if found is None:
            running = ", ".join(sorted(self.channels)) or "none"
            return f"delivery.channel: no channel named {channel[:40]!r} runs here (running: {running})"
        return found.check_conversation(to) if isinstance(found, ChecksConversations) else None

    async def deliver(self, target: Target, text: str, answering: Event | None = None) -> bool:
        """Send `text` to `target`; False when a hook held it. `answering` is the event a reply answers, so hooks
        know whom it is for (None for the host's own notes and questions)."""
        channel = self.channels.get(target.channel)
        if channel is None:
            raise LookupError(f"no channel named {target.channel!r}")
        fields = {
            **target_fields(target),
            "text": text,
            "session": answering.session_key if answering else None,
            "principal": principal(answering.principal) if answering else None,
        }
        if self.hooks.on("message:sending"):
            rewritten = await self.hooks.sending(fields)
            if rewritten is None:
                return False
            text = rewritten
        await channel.send(target, text)
        await self.hooks.fire("message:sent", {**fields, "text": text})
        return True
