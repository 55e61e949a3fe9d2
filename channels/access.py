"""Who may talk to the assistant in a chat channel: the policy every chat app shares (Discord's, Telegram's).

Safe by default: an unknown person's direct message earns a pairing code (`pairing.py`) and nothing else, and in a
group conversation only the listed users (none listed: everyone) are heard, by default only when they address the
bot. Where a group is allowed at all is the channel's own rule (Discord's guilds and channels, Telegram's chat ids).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from hermitcrab.channels.pairing import PairingStore
from hermitcrab.host.events import ChatType, Principal, person

DmPolicy = Literal["pairing", "allowlist", "open", "disabled"]
Verdict = Literal["answer", "pair", "ignore"]
GroupVerdict = Literal["answer", "if-mentioned", "ignore"]


@dataclass(frozen=True)
class People:
    """The people of one channel: owners by user id, who else may write directly, and the pairing store."""

    channel: str
    dm_policy: DmPolicy
    allow_from: Collection[str]
    pairing: PairingStore
    owners: Collection[str] = ()
    """The owners' user ids: their messages carry the owner's rights; everyone else is a peer or a group member."""

    def principal(self, user: str, chat: ChatType, name: str | None = None) -> Principal:
        """Who a message admitted from `user` comes from: an owner, else a peer in a DM or a group member."""
        if user in self.owners:
            return person("owner", self.channel, user, name)
        return person("peer" if chat == "direct" else "group", self.channel, user, name)

    def direct(self, user: str) -> Verdict:
        """A direct message: answer, send a pairing code (nothing reaches the agent), or ignore."""
        if self.dm_policy == "disabled":
            return "ignore"
        if user in self.owners:
            return "answer"
        if self.dm_policy == "open" or user in self.allow_from or self.pairing.is_allowed(self.channel, user):
            return "answer"
        return "pair" if self.dm_policy == "pairing" else "ignore"

    def in_group(self, users: Collection[str], require_mention: bool, user: str) -> GroupVerdict:
        """A message in an allowed group: only from a listed user (or an owner), and maybe only when addressed."""
        if users and user not in users and user not in self.owners:
            return "ignore"
        return "if-mentioned" if require_mention else "answer"
