"""Who may talk to the assistant on Telegram: private chats by the shared DM policy (`channels/access.py`), groups
only when their chat id is listed, and there by default only when the bot is mentioned or replied to."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from hermitcrab.channels.access import GroupVerdict, People


class GroupRule(Protocol):
    @property
    def require_mention(self) -> bool: ...

    @property
    def users(self) -> Collection[str]: ...


@dataclass(frozen=True)
class TelegramAccess:
    people: People
    groups: Mapping[str, GroupRule]
    """Allowed groups and supergroups by chat id (`-100…`); a forum topic follows its group."""

    def in_group(self, chat: str, user: str) -> GroupVerdict:
        rule = self.groups.get(chat)
        if rule is None:
            return "ignore"
        return self.people.in_group(rule.users, rule.require_mention, user)
