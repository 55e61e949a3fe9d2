"""The Telegram channel (python-telegram-bot's Bot API client); imported only when a Telegram bot token is set."""

from .access import TelegramAccess
from .channel import LoginRefused, TelegramChannel, make_bot

__all__ = ["LoginRefused", "TelegramAccess", "TelegramChannel", "make_bot"]
