"""The Discord channel (discord.py 2.x): access rules, replies split for Discord, buttons for questions."""

from __future__ import annotations

from .access import Access
from .channel import DiscordChannel, LoginRefused, point_at
from .delivery import DeliveryFailed

__all__ = ["Access", "DeliveryFailed", "DiscordChannel", "LoginRefused", "point_at"]
