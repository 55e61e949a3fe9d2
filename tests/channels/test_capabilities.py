"""Each channel offers the optional capabilities of `hermitcrab.host.events` by their declared shape.

The gateway finds a capability with `isinstance(channel, Asks)`; a method renamed in an adapter would silently
drop it (Discord's buttons would turn into typed questions), so the expected set is pinned here.
"""

from __future__ import annotations

import pytest

from hermitcrab.channels.discord.channel import DiscordChannel
from hermitcrab.channels.telegram.channel import TelegramChannel
from hermitcrab.channels.terminal import TerminalChannel
from hermitcrab.channels.web import WebChannel
from hermitcrab.channels.webhook import WebhookChannel
from hermitcrab.host.cli.ask import CliChannel
from hermitcrab.host.events import Asks, ChatLimits, ChecksConversations, Idles, Streams, WaitsReady

CAPABILITIES = (Asks, Idles, ChecksConversations, WaitsReady, Streams)


@pytest.mark.parametrize(
    ("adapter", "expected"),
    [
        (DiscordChannel, {Asks, Idles, ChecksConversations, WaitsReady, Streams}),
        (TelegramChannel, {Asks, Idles, ChecksConversations, WaitsReady, Streams}),
        (WebhookChannel, {ChecksConversations, Streams}),
        (TerminalChannel, {Asks, Streams}),
        (CliChannel, {Asks, Streams}),
        (WebChannel, {Asks, Idles, ChecksConversations, Streams}),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_a_channel_offers_exactly_the_capabilities_it_implements(adapter: type, expected: set[type]):
    assert {capability for capability in CAPABILITIES if issubclass(adapter, capability)} == expected


@pytest.mark.parametrize(
    "adapter", [DiscordChannel, TelegramChannel, WebhookChannel, TerminalChannel, CliChannel, WebChannel]
)
def test_every_channel_describes_what_it_can_show(adapter: type):
    display = getattr(adapter, "display", None)
    assert isinstance(display, str) and len(display) > 20


@pytest.mark.parametrize(
    ("adapter", "limit", "kinds"),
    [(DiscordChannel, 2000, ("image", "text")), (TelegramChannel, 4096, ("image", "text", "voice"))],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_a_chat_app_channel_declares_its_message_limit_and_the_files_it_takes(adapter: type, limit: int, kinds: tuple):
    declared = {name: getattr(adapter, name, None) for name in ChatLimits.__annotations__}
    assert declared == {"message_limit": limit, "attachments_in": kinds}


@pytest.mark.parametrize("adapter", [WebhookChannel, TerminalChannel, CliChannel, WebChannel])
def test_a_channel_with_no_message_limit_declares_none(adapter: type):
    assert not any(hasattr(adapter, name) for name in ChatLimits.__annotations__)
