"""Outbound messages: a reply in Discord-sized parts, counted as delivered only when Discord confirmed each part.

discord.py's HTTP client already retries 5xx answers and 429s (honouring retry-after); here a missing permission and
network errors are tried again with backoff. A part that still fails raises `DeliveryFailed`, and the next successful
send to that conversation starts with a note of what was lost, so nothing is silently claimed as sent. The first part
answers the triggering message (or completes a deferred slash command). A streamed reply's draft (`channels/draft.py`)
posts, edits and deletes single messages here, under the same retries and the same `DeliveryFailed`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import discord

from hermitcrab.channels.delivery import Deliveries, DeliveryFailed
from hermitcrab.host.events import Target
from hermitcrab.util.retry import Backoff, retrying

SEND_BACKOFF = Backoff(attempts=3, first_s=0.5)
LIMIT = 2000
"""Characters in one Discord message."""
_T = TypeVar("_T")


class NotAChannel(DeliveryFailed, ValueError):
    """A conversation that cannot be a Discord channel (a name, a URL): that delivery fails, nothing else does."""


def conversation_problem(to: str) -> str | None:
    """Why `to` cannot be a Discord conversation, or None for a plausible channel id (a snowflake: ASCII digits)."""
    return None if to.isascii() and to.isdigit() else f"delivery.to: {to!r} is not a Discord channel id"


class Outbox(Deliveries):
    """Sends for one client; remembers deferred slash commands and what could not be delivered where."""

    limit = LIMIT
    small_print = "-# "
    """Discord's subtext: a tool line under a draft shows small and grey."""

    def __init__(self, client: discord.Client) -> None:
        super().__init__("discord")
        self.client = client
        self._interactions: dict[str, discord.Interaction] = {}

    def defer(self, interaction: discord.Interaction) -> str:
        """Keep a deferred slash command; returns the `reply_to` that makes the next reply complete it."""
        self._interactions = {k: i for k, i in self._interactions.items() if not i.is_expired()}
        key = f"interaction:{interaction.id}"
        self._interactions[key] = interaction
        return key

    async def post(self, target: Target, text: str, view: discord.ui.View | None = None) -> discord.Message | None:
        """Send `text` in parts (the view on the last); the last message sent, None when there was nothing.

        NotAChannel, before anything is sent, when the conversation is no channel id."""
        conversation = target.conversation
        if (problem := conversation_problem(conversation)) is not None:
            raise NotAChannel(problem)
        interaction = self._interactions.pop(target.reply_to or "", None)
        channel = self.client.get_partial_messageable(int(conversation))
        first, rest = _Part(channel, _reference(target), interaction), _Part(channel, None, None)

        async def send(part: str, is_first: bool, is_last: bool) -> discord.Message:
            return await _send(first if is_first else rest, part, view if is_last else None)

        return await self.in_parts(conversation, text, LIMIT, send)

    async def post_one(self, target: Target, text: str, *, answering: bool) -> str:
        """Send one message (answering the triggering message when `answering`); its id once Discord confirmed it."""
        if (problem := conversation_problem(target.conversation)) is not None:
            raise NotAChannel(problem)
        channel = self.client.get_partial_messageable(int(target.conversation))
        part = _Part(channel, _reference(target) if answering else None, None)
        return str((await _send(part, text, None)).id)

    async def edit(self, conversation: str, message_id: str, text: str) -> None:
        """Replace the content of a message the bot sent."""
        message = self.client.get_partial_messageable(int(conversation)).get_partial_message(int(message_id))
        await _confirmed("a Discord edit", lambda: message.edit(content=text))

    async def delete(self, conversation: str, message_id: str) -> None:
        message = self.client.get_partial_messageable(int(conversation)).get_partial_message(int(message_id))
        await _confirmed("a Discord delete", message.delete)


@dataclass(frozen=True)
class _Part:
    """Where one message goes: the channel, answering a message or completing a deferred slash command."""

    channel: discord.PartialMessageable
    reference: discord.MessageReference | None
    interaction: discord.Interaction | None

    async def send(self, text: str, view: discord.ui.View | None) -> discord.Message:
        options: dict[str, Any] = {} if view is None else {"view": view}
        if self.interaction is not None and not self.interaction.is_expired():
            return await self.interaction.followup.send(text, wait=True, **options)
        if self.reference is not None:
            options["reference"] = self.reference
        return await self.channel.send(text, **options)


async def _send(part: _Part, text: str, view: discord.ui.View | None) -> discord.Message:
    """One message, tried again with backoff on a missing permission or a network error."""
    return await _confirmed("a Discord send", lambda: part.send(text, view))


async def _confirmed(what: str, call: Callable[[], Awaitable[_T]]) -> _T:
    """`call`'s result once Discord confirmed it, tried again on a missing permission or a network error; anything
    still failing is a `DeliveryFailed` saying why."""
    try:
        return await retrying(what, call, (discord.Forbidden, OSError, TimeoutError), SEND_BACKOFF)
    except discord.Forbidden as exc:
        raise DeliveryFailed(f"missing permission: {exc.text or exc.status}"[:200]) from exc
    except discord.HTTPException as exc:
        raise DeliveryFailed(f"HTTP {exc.status}: {exc.text}"[:200]) from exc
    except (OSError, TimeoutError) as exc:
        raise DeliveryFailed(f"network error: {exc}"[:200]) from exc


def _reference(target: Target) -> discord.MessageReference | None:
    if not (target.reply_to or "").isdigit():
        return None
    return discord.MessageReference(
        message_id=int(target.reply_to or 0), channel_id=int(target.conversation), fail_if_not_exists=False
    )
