"""The Discord channel wired into `hermitcrab run`.

`run` imports this module only when a bot token is configured: discord.py takes a quarter of a second to import,
which every other command would otherwise pay.
"""

from __future__ import annotations

import anyio
from anyio.abc import TaskGroup, TaskStatus

from hermitcrab.channels.pairing import PairingStore

from ..config import Settings
from ..errors import ConfigError
from ..gateway.gateway import Gateway

try:
    from hermitcrab.channels.discord import Access, DiscordChannel, LoginRefused, point_at
except ModuleNotFoundError as missing:  # a core install: discord.py comes with the discord extra
    raise ConfigError(
        "a Discord bot token is configured but the discord extra is not installed: pip install 'hermitcrab[discord]'"
    ) from missing


async def start(token: str, settings: Settings, gateway: Gateway, group: TaskGroup) -> None:
    """Plug the channel into the gateway and connect it in `group` (an unreachable Discord is retried there)."""
    config = settings.discord
    point_at(config.api_base, config.gateway_url)
    pairing = PairingStore(settings.state / "pairing")
    access = Access(config.dm_policy, config.allow_from, config.guilds, pairing, owners=config.owners)
    inbox = settings.workspace / "inbox" / "discord"
    channel = DiscordChannel(
        token,
        access,
        gateway.submit,
        inbox=inbox,
        max_text_bytes=config.max_text_attachment_bytes,
        drafts=settings.state / "discord" / "drafts.json",
        stream=config.stream,
        stream_in_guilds=config.stream_in_guilds,
    )
    gateway.add_channel(channel)
    await group.start(_serve, channel)


async def _serve(channel: DiscordChannel, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    try:
        await channel.serve(task_status=task_status)
    except* LoginRefused as refused:  # raised at login, or from inside the channel's task group once connecting
        raise ConfigError(str(refused.exceptions[0])) from None
