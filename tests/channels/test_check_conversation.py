"""Each channel says which delivery targets it can reach, so the host can refuse a wrong one where it is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermitcrab.channels.discord import Access, DiscordChannel
from hermitcrab.channels.discord.delivery import NotAChannel
from hermitcrab.channels.pairing import PairingStore
from hermitcrab.channels.webhook import WebhookChannel
from hermitcrab.host.events import Event, Target
from hermitcrab.util.outbound import Outbound, OutboundRefused


async def _ignore(event: Event) -> None:
    return None


@pytest.fixture
def discord_channel(tmp_path: Path) -> DiscordChannel:
    access = Access("pairing", (), {}, PairingStore(tmp_path))
    return DiscordChannel(
        "token", access, _ignore, inbox=tmp_path / "inbox", max_text_bytes=1000, drafts=tmp_path / "drafts.json"
    )


def test_a_discord_conversation_is_a_channel_id(discord_channel: DiscordChannel):
    assert discord_channel.check_conversation("800000000000000002") is None
    assert discord_channel.check_conversation("general") == "delivery.to: 'general' is not a Discord channel id"
    assert discord_channel.check_conversation("not-a-channel") is not None
    assert discord_channel.check_conversation("") is not None
    assert discord_channel.check_conversation("١٢٣") is not None  # digits, but not ones Discord uses


def test_a_webhook_conversation_is_an_http_url():
    channel = WebhookChannel("token", _ignore, lambda: None)

    assert channel.check_conversation("https://example.com/hook") is None
    assert channel.check_conversation("general") == (
        "delivery.to: a webhook conversation is an http(s) URL, not 'general'"
    )


def test_a_webhook_callback_to_this_machine_or_its_network_is_refused_unless_allowed():
    channel = WebhookChannel("token", _ignore, lambda: None)
    allowing = WebhookChannel("token", _ignore, lambda: None, outbound=Outbound(["127.0.0.1:9000"]))

    for url in ("http://127.0.0.1:9000/sink", "http://169.254.169.254/latest/", "http://localhost:9000/"):
        assert "refused" in (channel.check_conversation(url) or ""), url
    assert allowing.check_conversation("http://127.0.0.1:9000/sink") is None
    assert allowing.check_conversation("http://127.0.0.1:9001/sink") is not None


async def test_a_reply_is_not_posted_to_a_refused_callback_even_when_the_check_was_skipped():
    with pytest.raises(OutboundRefused, match="loopback"):
        await WebhookChannel("token", _ignore, lambda: None).send(Target("webhook", "http://127.0.0.1:9/cb"), "hi")


async def test_a_delivery_to_a_discord_conversation_that_is_no_channel_id_fails_that_delivery_alone(
    discord_channel: DiscordChannel,
):
    """The host checks targets where they are written; a channel that gets one anyway refuses it before sending."""
    with pytest.raises(NotAChannel, match=r"delivery\.to: 'general' is not a Discord channel id"):
        await discord_channel.send(Target("discord", "general"), "hello")
    await discord_channel.typing(Target("discord", "general"))  # nothing to show, nothing raised
