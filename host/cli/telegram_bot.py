"""The Telegram channel wired into `hermitcrab run`.

`run` imports this module only when a Telegram bot token is configured, so other commands never pay for importing
python-telegram-bot, and a core install without the telegram extra fails only then, in one line.
"""

from __future__ import annotations

import anyio
from anyio.abc import TaskGroup, TaskStatus

from hermitcrab.channels.access import People
from hermitcrab.channels.pairing import PairingStore

from ..config import Settings
from ..errors import ConfigError
from ..gateway.gateway import Gateway

try:
    from hermitcrab.channels.telegram import LoginRefused, TelegramAccess, TelegramChannel, make_bot
except ModuleNotFoundError as missing:  # a core install: python-telegram-bot comes with the telegram extra
    raise ConfigError(
        "a Telegram bot token is configured but the telegram extra is not installed: pip install 'hermitcrab[telegram]'"
    ) from missing


async def start(token: str, settings: Settings, gateway: Gateway, group: TaskGroup) -> None:
    """Plug the channel into the gateway and run it in `group` (an unreachable Telegram is retried there)."""
    config = settings.telegram
    pairing = PairingStore(settings.state / "pairing")
    people = People("telegram", config.dm_policy, config.allow_from, pairing, config.owners)
    channel = TelegramChannel(
        make_bot(token, config.api_base),
        TelegramAccess(people, config.groups),
        gateway.submit,
        state=settings.state / "telegram",
        inbox=settings.workspace / "inbox" / "telegram",
        max_text_bytes=config.max_text_attachment_bytes,
        stream=config.stream,
        stream_in_groups=config.stream_in_groups,
    )
    gateway.add_channel(channel)
    await group.start(_serve, channel)


async def _serve(channel: TelegramChannel, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    try:
        await channel.serve(task_status=task_status)
    except* LoginRefused as refused:
        raise ConfigError(str(refused.exceptions[0])) from None
