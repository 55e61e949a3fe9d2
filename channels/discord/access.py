"""Who may talk to the assistant on Discord: direct messages by policy, guilds only where the owner allowed them.

Safe by default: an unknown person's DM earns a pairing code and nothing else; a guild is silent unless it is
listed in the config, and there it answers only when mentioned (per guild and channel configurable).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from hermitcrab.channels.access import DmPolicy, GroupVerdict, People, Verdict
from hermitcrab.channels.pairing import PairingStore
from hermitcrab.host.events import ChatType, Principal


class ChannelRule(Protocol):
    @property
    def allow(self) -> bool: ...

    @property
    def require_mention(self) -> bool | None: ...


class GuildRule(Protocol):
    @property
    def require_mention(self) -> bool: ...

    @property
    def users(self) -> Collection[str]: ...

    @property
    def channels(self) -> Mapping[str, ChannelRule]: ...


@dataclass(frozen=True)
class Where:
    """Where a message was written: a DM (no guild), or a guild channel or thread (with its parent channel)."""

    guild: str | None
    channel: str
    parent: str | None = None


@dataclass(frozen=True)
class Access:
    dm_policy: DmPolicy
    allow_from: Collection[str]
    guilds: Mapping[str, GuildRule]
    pairing: PairingStore
    owners: Collection[str] = ()
    """The owners' user ids: their messages carry the owner's rights; everyone else is a peer or a group member."""

    @property
    def people(self) -> People:
        return People("discord", self.dm_policy, self.allow_from, self.pairing, self.owners)

    def principal(self, user: str, chat: ChatType, name: str | None = None) -> Principal:
        """Who a message admitted from `user` comes from: an owner, else a peer in a DM or a group member."""
        return self.people.principal(user, chat, name)

    def direct(self, user: str) -> Verdict:
        """A direct message: answer, send a pairing code (nothing reaches the agent), or ignore."""
        return self.people.direct(user)

    def in_guild(self, where: Where, user: str) -> GroupVerdict:
        """A guild message: the guild must be listed, the channel (or a thread's parent) allowed, the user too."""
        guild = self.guilds.get(where.guild or "")
        if guild is None:
            return "ignore"
        rule = guild.channels.get(where.channel) or guild.channels.get(where.parent or "")
        if rule is None and guild.channels:
            return "ignore"
        if rule is not None and not rule.allow:
            return "ignore"
        mention = guild.require_mention if rule is None or rule.require_mention is None else rule.require_mention
        return self.people.in_group(guild.users, mention, user)
